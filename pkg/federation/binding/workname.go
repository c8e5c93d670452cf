package binding

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
)

// ownedBy reports whether w is one of binding's Works: labelled as its, and controlled by no other object. A Work
// so labelled that nothing controls is the binding's to adopt; one another binding controls is never written.
func ownedBy(w *workv1alpha1.Work, binding string) bool {
	if w.Labels[names.BindingLabel] != names.LabelValue(binding) {
		return false
	}
	ref := metav1.GetControllerOf(w)
	if ref == nil {
		return true
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == workv1alpha1.GroupVersion.Group && ref.Kind == "ResourceBinding" && ref.Name == binding
}

// isWorkOf reports whether w is binding's Work for cluster.
func isWorkOf(w *workv1alpha1.Work, binding, cluster string) bool {
	return ownedBy(w, binding) && w.Spec.ClusterName == cluster
}

// workName is the name of a new Work of binding for cluster: its plain name (names.Work), unless a Work of another
// binding or cluster holds it, then names.DistinctWork. Plain names of different pairs may be the same, and a Work
// keeps the name it was created with: renaming it would remove its objects from the member and apply them again.
// holder reads the Work holding a name (nil when none does).
func workName(binding, cluster string, holder func(name string) (*workv1alpha1.Work, error)) (string, error) {
	candidates := []string{names.Work(binding, cluster), names.DistinctWork(binding, cluster)}
	for _, n := range candidates {
		w, err := holder(n)
		if err != nil {
			return "", err
		}
		// The binding's own Work for the cluster, not listed yet, is met again on create (AlreadyExists).
		if w == nil || isWorkOf(w, binding, cluster) {
			return n, nil
		}
	}
	return "", fmt.Errorf("%w: %s and %s are Works of other bindings or clusters", errNamesHeld, candidates[0], candidates[1])
}

// errNamesHeld is why a cluster gets no new Work when Works of others hold every name workName may give it.
var errNamesHeld = errors.New("no name left for the Work")
