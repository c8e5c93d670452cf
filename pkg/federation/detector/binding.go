package detector

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

// DesiredSpec is the part of a binding's spec the detector owns, for template obj claimed by p, with the replicas
// and per-replica requirements the interpreter found (0 and nil for kinds without replicas). The scheduler's
// fields (clusters, eviction tasks, reschedule trigger) are left empty: see SetDesired. So is the
// schedule priority, which needs the policy's PriorityClass read.
func DesiredSpec(obj *unstructured.Unstructured, p Policy, replicas int32, req *workv1alpha1.ReplicaRequirements) workv1alpha1.ResourceBindingSpec {
	s := p.Spec
	spec := workv1alpha1.ResourceBindingSpec{
		Resource: workv1alpha1.ObjectReference{
			APIVersion:      obj.GetAPIVersion(),
			Kind:            obj.GetKind(),
			Namespace:       obj.GetNamespace(),
			Name:            obj.GetName(),
			UID:             obj.GetUID(),
			ResourceVersion: obj.GetResourceVersion(),
		},
		Replicas:                    replicas,
		ReplicaRequirements:         req.DeepCopy(),
		Placement:                   s.Placement.DeepCopy(),
		PropagateDeps:               s.PropagateDeps,
		ConflictResolution:          s.ConflictResolution,
		SchedulerName:               s.SchedulerName,
		Failover:                    s.Failover.DeepCopy(),
		Suspension:                  s.Suspension.DeepCopy(),
		PreserveResourcesOnDeletion: copyBool(s.PreserveResourcesOnDeletion),
		RolloutScope:                s.RolloutScope,
	}
	return spec
}

// SetDesired copies the detector's fields of desired into spec, leaving the fields other stages own alone, and
// reports whether spec changed.
func SetDesired(spec *workv1alpha1.ResourceBindingSpec, desired workv1alpha1.ResourceBindingSpec) bool {
	before := spec.DeepCopy()
	spec.Resource = desired.Resource
	spec.Replicas = desired.Replicas
	spec.ReplicaRequirements = desired.ReplicaRequirements.DeepCopy()
	spec.Placement = desired.Placement.DeepCopy()
	spec.PropagateDeps = desired.PropagateDeps
	spec.ConflictResolution = desired.ConflictResolution
	spec.SchedulerName = desired.SchedulerName
	spec.SchedulePriority = desired.SchedulePriority.DeepCopy()
	spec.Failover = desired.Failover.DeepCopy()
	spec.Suspension = desired.Suspension.DeepCopy()
	spec.PreserveResourcesOnDeletion = copyBool(desired.PreserveResourcesOnDeletion)
	spec.RolloutScope = desired.RolloutScope
	return !equality.Semantic.DeepEqual(before, spec)
}

// HeldBack reports whether a binding, with spec and labels, claimed by p stays as it is although p may have
// changed: p asks for Lazy activation, the binding already belongs to p, and the template is the version the
// binding was built from. A policy change then reaches the template at its next change.
func HeldBack(spec *workv1alpha1.ResourceBindingSpec, labels map[string]string, desired workv1alpha1.ResourceBindingSpec, p Policy) bool {
	return p.Spec.ActivationPreference == policyv1alpha1.LazyActivation &&
		labels[p.ClaimLabel()] == p.ClaimValue() &&
		spec.Resource.UID == desired.Resource.UID &&
		spec.Resource.ResourceVersion == desired.Resource.ResourceVersion
}

func copyBool(b *bool) *bool {
	if b == nil {
		return nil
	}
	v := *b
	return &v
}
