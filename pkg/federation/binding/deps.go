package binding

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
)

// dependencies reads the objects the template of binding depends on, as the interpreter finds them, stripped of
// server fields and each once. A dependency that does not exist is returned in missing ("Kind namespace/name"), not
// as an error: the template still goes out, and the binding's condition says what is missing. What it looks up,
// found or not, is recorded as binding's dependents before it reads any: a dependency created or changed from then
// on renders the binding again, even one that changes while this pass reads it.
//
// The interpreter failing (a webhook down, a script failing, a selector in its answer that does not parse) is a
// dependencyInterpretError; reading a dependency failing is returned as it is.
//
// A dependency named in another namespace than the template's is neither read nor propagated: it is returned in
// missing, saying so, and the template still goes out. A Work holds only its own namespace's objects
// (rendering.InWorkScope), as Karmada's dependencies are the workload's own namespace's; and reading it would tell
// the template's author whether another namespace's object exists.
func (r *Reconciler) dependencies(ctx context.Context, binding types.NamespacedName, template *unstructured.Unstructured) (deps []*unstructured.Unstructured, missing []string, err error) {
	if !r.Interpreter.Handles(template.GroupVersionKind(), interpreter.InterpretDependency) {
		r.dependents.forget(binding)
		return nil, nil, nil
	}
	refs, err := r.Interpreter.InterpretDependency(ctx, template)
	if err != nil {
		return nil, nil, dependencyInterpretError{err}
	}
	type lookup struct {
		ref      interpreter.DependentObjectReference
		ns       string
		selector labels.Selector
	}
	var looked dependencyRefs
	lookups := make([]lookup, 0, len(refs))
	for _, ref := range refs {
		l := lookup{ref: ref, ns: ref.Namespace}
		if l.ns == "" {
			l.ns = template.GetNamespace()
		}
		if l.ns != template.GetNamespace() {
			what := ref.Name
			if what == "" {
				what = metav1.FormatLabelSelector(ref.LabelSelector)
			}
			missing = append(missing, fmt.Sprintf("%s %s/%s (not propagated: a template's dependencies are of its own namespace)", ref.Kind, l.ns, what))
			continue
		}
		space := depSpace{GroupKind: schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind).GroupKind(), Namespace: l.ns}
		switch {
		case ref.Name != "":
			looked.names = append(looked.names, depName{depSpace: space, Name: ref.Name})
		case ref.LabelSelector != nil:
			if l.selector, err = metav1.LabelSelectorAsSelector(ref.LabelSelector); err != nil {
				return nil, nil, dependencyInterpretError{fmt.Errorf("dependency %s selector: %w", ref.Kind, err)}
			}
			looked.selectors = append(looked.selectors, depSelector{depSpace: space, Selector: l.selector})
		default:
			continue
		}
		lookups = append(lookups, l)
	}
	r.dependents.set(binding, looked)

	seen := map[string]bool{}
	keep := func(obj *unstructured.Unstructured) {
		key := obj.GetAPIVersion() + "/" + obj.GetKind() + "/" + obj.GetNamespace() + "/" + obj.GetName()
		if !seen[key] {
			seen[key] = true
			deps = append(deps, stripServerFields(obj))
		}
	}
	for _, l := range lookups {
		ref := l.ref
		if l.selector == nil {
			obj := &unstructured.Unstructured{}
			obj.SetAPIVersion(ref.APIVersion)
			obj.SetKind(ref.Kind)
			err := r.Templates.Get(ctx, types.NamespacedName{Namespace: l.ns, Name: ref.Name}, obj)
			switch {
			case apierrors.IsNotFound(err):
				missing = append(missing, fmt.Sprintf("%s %s/%s", ref.Kind, l.ns, ref.Name))
			case err != nil:
				return nil, nil, fmt.Errorf("dependency %s %s/%s: %w", ref.Kind, l.ns, ref.Name, err)
			default:
				keep(obj)
			}
			continue
		}
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(ref.APIVersion)
		list.SetKind(ref.Kind + "List")
		if err := r.Templates.List(ctx, list, client.InNamespace(l.ns), client.MatchingLabelsSelector{Selector: l.selector}); err != nil {
			return nil, nil, fmt.Errorf("dependencies %s %s: %w", ref.Kind, l.selector, err)
		}
		for i := range list.Items {
			keep(&list.Items[i])
		}
	}
	return deps, missing, nil
}

// dependencyInterpretError is the interpreter failing to find a template's dependencies. No Work of the binding is
// rendered without them (the member would lose its dependencies): each keeps what it had, the binding tells why as
// a render failure of each target cluster, and the pass is retried.
type dependencyInterpretError struct{ err error }

func (e dependencyInterpretError) Error() string { return "find dependencies: " + e.err.Error() }

func (e dependencyInterpretError) Unwrap() error { return e.err }
