package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=rb,categories=fedmesh
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.resource.kind`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Scheduled",type=string,JSONPath=`.status.conditions[?(@.type=="Scheduled")].status`
// +kubebuilder:printcolumn:name="Fully-Applied",type=string,JSONPath=`.status.conditions[?(@.type=="FullyApplied")].status`
// +kubebuilder:printcolumn:name="Priority",type=integer,JSONPath=`.spec.schedulePriority.priority`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ResourceBinding binds a namespaced resource template to the policy that placed it: the placement, the scheduler's
// choice of clusters and replicas, and the status collected back from those clusters. It lives in the template's
// namespace.
type ResourceBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the template, its placement and the scheduling result.
	// +required
	Spec ResourceBindingSpec `json:"spec"`

	// Status is the scheduling progress and the template's status in each cluster.
	// +optional
	Status ResourceBindingStatus `json:"status,omitempty"`
}

// ResourceBindingSpec is what a binding propagates, where to, and what the scheduler decided.
type ResourceBindingSpec struct {
	// Resource is the template.
	// +required
	Resource ObjectReference `json:"resource"`

	// PropagateDeps propagates the template's dependencies too; copied from the policy. They go in this binding's
	// Works after the template, not in bindings of their own.
	// +optional
	PropagateDeps bool `json:"propagateDeps,omitempty"`

	// ReplicaRequirements is what one replica of the template needs, as the interpreter found it.
	// +optional
	ReplicaRequirements *ReplicaRequirements `json:"replicaRequirements,omitempty"`

	// Replicas is the template's replica count, as the interpreter found it.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// Clusters is the scheduling result: the clusters the template goes to, with their replicas.
	// +kubebuilder:validation:MaxItems=1024
	// +listType=map
	// +listMapKey=name
	// +optional
	Clusters []TargetCluster `json:"clusters,omitempty"`

	// Placement is copied from the policy.
	// +optional
	Placement *policyv1alpha1.Placement `json:"placement,omitempty"`

	// GracefulEvictionTasks are clusters the template left whose copy stays until the substitute is healthy or
	// the grace period is over (failover with purgeMode Gracefully), or, with purgeMode Directly, whose copy went
	// at once but whose task keeps the cluster out (application failover) or carries state preserved from it, for
	// as long (see GracefulEvictionTask).
	// +kubebuilder:validation:MaxItems=1024
	// +listType=atomic
	// +optional
	GracefulEvictionTasks []GracefulEvictionTask `json:"gracefulEvictionTasks,omitempty"`

	// SchedulerName is the scheduler that places this binding; copied from the policy.
	// +optional
	SchedulerName string `json:"schedulerName,omitempty"`

	// SchedulePriority orders the binding in the scheduler's queue: higher first, the same in arrival order. The
	// detector sets it from the value of the PriorityClass the policy's schedulePriority names; unset is 0.
	// +optional
	SchedulePriority *SchedulePriority `json:"schedulePriority,omitempty"`

	// Failover is copied from the policy.
	// +optional
	Failover *policyv1alpha1.FailoverBehavior `json:"failover,omitempty"`

	// ConflictResolution is copied from the policy.
	// +kubebuilder:default=Abort
	// +optional
	ConflictResolution policyv1alpha1.ConflictResolution `json:"conflictResolution,omitempty"`

	// RescheduleTriggeredAt asks for a fresh scheduling, ignoring the previous result, when it is later than
	// status.lastScheduledTime.
	// +optional
	RescheduleTriggeredAt *metav1.Time `json:"rescheduleTriggeredAt,omitempty"`

	// Suspension is copied from the policy.
	// +optional
	Suspension *policyv1alpha1.Suspension `json:"suspension,omitempty"`

	// PreserveResourcesOnDeletion is copied from the policy.
	// +optional
	PreserveResourcesOnDeletion *bool `json:"preserveResourcesOnDeletion,omitempty"`

	// RolloutScope is copied from the policy: with Federation the binding stage paces a Deployment's rolling
	// update across the clusters (package rollout).
	// +optional
	RolloutScope policyv1alpha1.RolloutScope `json:"rolloutScope,omitempty"`
}

// ResourceBindingStatus is a binding's scheduling progress and per-cluster status.
type ResourceBindingStatus struct {
	// SchedulerObservedGeneration is the generation the scheduler last placed; below metadata.generation means
	// scheduling is pending.
	// +optional
	SchedulerObservedGeneration int64 `json:"schedulerObservedGeneration,omitempty"`

	// SchedulerObservedAffinityName is the clusterAffinities group the current result came from.
	// +optional
	SchedulerObservedAffinityName string `json:"schedulerObservingAffinityName,omitempty"`

	// LastScheduledTime is when the scheduler last placed the binding successfully.
	// +optional
	LastScheduledTime *metav1.Time `json:"lastScheduledTime,omitempty"`

	// Conditions: Scheduled and FullyApplied.
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// AggregatedStatus is the template's status in each cluster.
	// +listType=map
	// +listMapKey=clusterName
	// +optional
	AggregatedStatus []AggregatedStatusItem `json:"aggregatedStatus,omitempty"`
}

// The condition types of bindings.
const (
	// ConditionScheduled is true when the scheduler placed the binding.
	ConditionScheduled = "Scheduled"
	// ConditionFullyApplied is true when the template is applied in every scheduled cluster.
	ConditionFullyApplied = "FullyApplied"
)

// +kubebuilder:object:root=true

// ResourceBindingList is a list of ResourceBindings.
type ResourceBindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ResourceBinding `json:"items"`
}
