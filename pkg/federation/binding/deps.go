package binding

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
)

// dependencies reads the objects the template depends on, as the interpreter finds them, stripped of server fields
// and each once. A dependency that does not exist is returned in missing ("Kind namespace/name"), not as an error:
// the template still goes out, and the binding's condition says what is missing. looked are the dependencies it
// looked up, found or not, whose appearance or change is to render the binding again.
func (r *Reconciler) dependencies(ctx context.Context, template *unstructured.Unstructured) (deps []*unstructured.Unstructured, missing []string, looked dependencyRefs, err error) {
	if !r.Interpreter.Handles(template.GroupVersionKind(), interpreter.InterpretDependency) {
		return nil, nil, dependencyRefs{}, nil
	}
	refs, err := r.Interpreter.InterpretDependency(ctx, template)
	if err != nil {
		return nil, nil, dependencyRefs{}, err
	}
	seen := map[string]bool{}
	keep := func(obj *unstructured.Unstructured) {
		key := obj.GetAPIVersion() + "/" + obj.GetKind() + "/" + obj.GetNamespace() + "/" + obj.GetName()
		if !seen[key] {
			seen[key] = true
			deps = append(deps, stripServerFields(obj))
		}
	}
	for _, ref := range refs {
		ns := ref.Namespace
		if ns == "" {
			ns = template.GetNamespace()
		}
		space := depSpace{GroupKind: schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind).GroupKind(), Namespace: ns}
		if ref.Name != "" {
			looked.names = append(looked.names, depName{depSpace: space, Name: ref.Name})
			obj := &unstructured.Unstructured{}
			obj.SetAPIVersion(ref.APIVersion)
			obj.SetKind(ref.Kind)
			err := r.Templates.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, obj)
			switch {
			case apierrors.IsNotFound(err):
				missing = append(missing, fmt.Sprintf("%s %s/%s", ref.Kind, ns, ref.Name))
			case err != nil:
				return nil, nil, dependencyRefs{}, fmt.Errorf("dependency %s %s/%s: %w", ref.Kind, ns, ref.Name, err)
			default:
				keep(obj)
			}
			continue
		}
		if ref.LabelSelector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(ref.LabelSelector)
		if err != nil {
			return nil, nil, dependencyRefs{}, fmt.Errorf("dependency %s selector: %w", ref.Kind, err)
		}
		looked.selectors = append(looked.selectors, depSelector{depSpace: space, Selector: sel})
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(ref.APIVersion)
		list.SetKind(ref.Kind + "List")
		if err := r.Templates.List(ctx, list, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return nil, nil, dependencyRefs{}, fmt.Errorf("dependencies %s %s: %w", ref.Kind, sel, err)
		}
		for i := range list.Items {
			keep(&list.Items[i])
		}
	}
	return deps, missing, looked, nil
}
