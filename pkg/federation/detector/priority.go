package detector

import (
	"context"

	schedulingv1 "k8s.io/api/scheduling/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

// ReasonPriorityClassNotFound: the policy's schedulePriority names a PriorityClass that does not exist, so no new
// binding is written; one that exists keeps the priority it has.
const ReasonPriorityClassNotFound = "PriorityClassNotFound"

// schedulePriority is the schedule priority of the bindings p claims: the value of the PriorityClass its
// schedulePriority names (KubePriorityClass, the only source), nil without one. A missing class is an error (as
// in Karmada, where the binding's creation fails): the binding would be scheduled at the wrong priority.
func (r *Reconciler) schedulePriority(ctx context.Context, p Policy) (*workv1alpha1.SchedulePriority, error) {
	sp := p.Spec.SchedulePriority
	if sp == nil {
		return nil, nil
	}
	var pc schedulingv1.PriorityClass
	if err := r.Client.Get(ctx, client.ObjectKey{Name: sp.PriorityClassName}, &pc); err != nil {
		return nil, err
	}
	return &workv1alpha1.SchedulePriority{Priority: pc.Value}, nil
}

// policiesNaming are the policies whose schedulePriority names the PriorityClass obj: a class created, changed or
// deleted changes the priority of their bindings, so their templates are looked at again (reconcilePolicy).
func (r *Reconciler) policiesNaming(ctx context.Context, obj client.Object) []reconcile.Request {
	all, err := r.candidatesEverywhere(ctx)
	if err != nil {
		logf.FromContext(ctx).Error(err, "listing the policies naming a PriorityClass", "priorityClass", obj.GetName())
		return nil
	}
	var out []reconcile.Request
	for _, p := range all {
		if sp := p.Spec.SchedulePriority; sp != nil && sp.PriorityClassName == obj.GetName() {
			out = append(out, reconcile.Request{NamespacedName: p.Key()})
		}
	}
	return out
}
