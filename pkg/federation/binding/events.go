package binding

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

// specOrCondition passes what this stage reads of a binding: a change of its spec (generation, which deletion
// raises too) or of its condition of type condType (the scheduler's Scheduled verdict). The rest of its status is
// other stages' (the aggregated status, FullyApplied) and would only make this stage look again at nothing new.
func specOrCondition(condType string) predicate.Predicate {
	return predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool { return conditionChanged(e.ObjectOld, e.ObjectNew, condType) },
	})
}

// conditionChanged reports whether the condition of type condType differs between bindings old and cur.
func conditionChanged(old, cur client.Object, condType string) bool {
	return !equality.Semantic.DeepEqual(condition(old, condType), condition(cur, condType))
}

func condition(o client.Object, condType string) *metav1.Condition {
	if b, ok := o.(*workv1alpha1.ResourceBinding); ok {
		return meta.FindStatusCondition(b.Status.Conditions, condType)
	}
	return nil
}

// editedOrDeleted passes the changes of a Work this stage undoes: its spec edited (generation, which deletion
// raises too) and the Work gone. Its creation is this stage's own doing, and its status the other stages'.
var editedOrDeleted = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	UpdateFunc:  func(e event.UpdateEvent) bool { return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() },
	DeleteFunc:  func(event.DeleteEvent) bool { return true },
	GenericFunc: func(event.GenericEvent) bool { return false },
}
