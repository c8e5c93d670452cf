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

// specOrCondition passes what this stage reads of a binding or a Work: a change of its spec (generation, which
// deletion raises too) or of its condition of type condType (the scheduler's Scheduled verdict on a binding, a
// Work's Applied). The rest of their status is other stages' (the aggregated status, each Work's manifest
// statuses) and would only make this stage look again at nothing new.
func specOrCondition(condType string) predicate.Predicate {
	return predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool { return conditionChanged(e.ObjectOld, e.ObjectNew, condType) },
	})
}

// conditionChanged reports whether the condition of type condType differs between old and cur, bindings or Works.
func conditionChanged(old, cur client.Object, condType string) bool {
	return !equality.Semantic.DeepEqual(condition(old, condType), condition(cur, condType))
}

func condition(o client.Object, condType string) *metav1.Condition {
	switch x := o.(type) {
	case *workv1alpha1.ResourceBinding:
		return meta.FindStatusCondition(x.Status.Conditions, condType)
	case *workv1alpha1.Work:
		return meta.FindStatusCondition(x.Status.Conditions, condType)
	}
	return nil
}
