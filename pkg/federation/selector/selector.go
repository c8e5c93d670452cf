package selector

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
)

// Precision is how closely a resource selector names a template.
type Precision int

// The precisions, least precise first.
const (
	NoMatch Precision = iota
	KindMatch
	LabelMatch
	NameMatch
)

// Of is the precision of sel for obj, which must be of sel's apiVersion and kind. A selector without a namespace
// means defaultNamespace (a namespaced policy's own), or any namespace when that is empty too. A name, when set,
// decides alone (a label selector beside it is not consulted, as in Karmada). A label selector that does not parse
// is an error.
func Of(sel *policyv1alpha1.ResourceSelector, defaultNamespace string, obj *unstructured.Unstructured) (Precision, error) {
	if sel.APIVersion != obj.GetAPIVersion() || sel.Kind != obj.GetKind() {
		return NoMatch, nil
	}
	return within(sel, defaultNamespace, obj)
}

// OfAnyVersion is Of for obj read in any version of sel's group and kind. The API server serves one object in
// every version of its kind: whatever version it is read in, a propagation policy selects it or not alike. (An
// override policy's overriders are written against the fields of the version it names, so it selects by Of.)
func OfAnyVersion(sel *policyv1alpha1.ResourceSelector, defaultNamespace string, obj *unstructured.Unstructured) (Precision, error) {
	gv, err := schema.ParseGroupVersion(sel.APIVersion)
	if err != nil || gv.Version == "" || gv.Group != obj.GroupVersionKind().Group || sel.Kind != obj.GetKind() {
		return NoMatch, nil
	}
	return within(sel, defaultNamespace, obj)
}

// within is the precision of sel for obj, of the kind sel names: by namespace, name and labels.
func within(sel *policyv1alpha1.ResourceSelector, defaultNamespace string, obj *unstructured.Unstructured) (Precision, error) {
	ns := sel.Namespace
	if ns == "" {
		ns = defaultNamespace
	}
	if ns != "" && ns != obj.GetNamespace() {
		return NoMatch, nil
	}
	switch {
	case sel.Name != "":
		if sel.Name == obj.GetName() {
			return NameMatch, nil
		}
		return NoMatch, nil
	case sel.LabelSelector != nil:
		s, err := metav1.LabelSelectorAsSelector(sel.LabelSelector)
		if err != nil {
			return NoMatch, fmt.Errorf("resource selector: %w", err)
		}
		if !s.Matches(labels.Set(obj.GetLabels())) {
			return NoMatch, nil
		}
		return LabelMatch, nil
	default:
		return KindMatch, nil
	}
}

// Best is the precision of the best of selectors for obj (see Of); the first error stops it.
func Best(selectors []policyv1alpha1.ResourceSelector, defaultNamespace string, obj *unstructured.Unstructured) (Precision, error) {
	best := NoMatch
	for i := range selectors {
		p, err := Of(&selectors[i], defaultNamespace, obj)
		if err != nil {
			return NoMatch, err
		}
		best = max(best, p)
	}
	return best, nil
}
