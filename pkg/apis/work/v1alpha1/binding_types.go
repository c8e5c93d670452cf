package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
)

// ObjectReference locates a resource template in the host cluster.
type ObjectReference struct {
	// APIVersion of the template, e.g. "apps/v1".
	// +kubebuilder:validation:MinLength=1
	// +required
	APIVersion string `json:"apiVersion"`

	// Kind of the template, e.g. "Deployment".
	// +kubebuilder:validation:MinLength=1
	// +required
	Kind string `json:"kind"`

	// Namespace of the template; empty for a cluster-scoped one.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Name of the template.
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`

	// UID of the template.
	// +optional
	UID types.UID `json:"uid,omitempty"`

	// ResourceVersion of the template the binding was last built from.
	// +optional
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// ReplicaRequirements is what one replica needs, for the scheduler's fit and capacity estimates.
type ReplicaRequirements struct {
	// NodeClaim is the replica's hard node constraints.
	// +optional
	NodeClaim *NodeClaim `json:"nodeClaim,omitempty"`

	// ResourceRequest is the replica's resource requests, e.g. cpu and memory.
	// +optional
	ResourceRequest corev1.ResourceList `json:"resourceRequest,omitempty"`

	// Namespace of the replicas, for quota checks.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// PriorityClassName of the replicas.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// NodeClaim is the node constraints a replica's pods must satisfy.
type NodeClaim struct {
	// HardNodeAffinity is the pods' required node affinity.
	// +optional
	HardNodeAffinity *corev1.NodeSelector `json:"hardNodeAffinity,omitempty"`

	// NodeSelector is the pods' node selector.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations are the pods' tolerations.
	// +listType=atomic
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
}

// TargetCluster is a cluster a template is scheduled to.
type TargetCluster struct {
	// Name of the cluster.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// Replicas the cluster gets; unused for templates without replicas.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
}

// GracefulEvictionTask is the removal of a template's copy from a cluster the binding left, once it is safe: the
// scheduler makes one when it fails over from a cluster with purgeMode Gracefully (or Directly, to carry state
// preserved from it), or (reason ApplicationFailure,
// any purge mode) when application failover moves the workload off a cluster, which then takes no replicas while
// the task stands. The binding stage keeps that cluster's Work while it stands (but with purgeMode Directly), and
// the eviction stage removes it once the workload is healthy on the binding's clusters or the grace period is
// over. preservedLabelState is the state statePreservation picked from the copy left (see
// policy StatePreservation).
// +kubebuilder:validation:XValidation:rule="!(has(self.gracePeriodSeconds) && has(self.suppressDeletion))",message="gracePeriodSeconds and suppressDeletion are mutually exclusive"
type GracefulEvictionTask struct {
	// FromCluster is the cluster being left.
	// +kubebuilder:validation:MinLength=1
	// +required
	FromCluster string `json:"fromCluster"`

	// Replicas to evict; unset for templates without replicas.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Reason is a CamelCase machine-readable reason for the eviction.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`
	// +required
	Reason string `json:"reason"`

	// Message explains the eviction to people.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`

	// Producer is the controller that asked for the eviction.
	// +kubebuilder:validation:MinLength=1
	// +required
	Producer string `json:"producer"`

	// GracePeriodSeconds bounds the wait for a healthy substitute; then the copy is removed anyway.
	// +kubebuilder:validation:Minimum=1
	// +optional
	GracePeriodSeconds *int32 `json:"gracePeriodSeconds,omitempty"`

	// SuppressDeletion keeps the copy until a person or tool clears this.
	// +optional
	SuppressDeletion *bool `json:"suppressDeletion,omitempty"`

	// PurgeMode is the policy's purge mode for this eviction.
	// +optional
	PurgeMode policyv1alpha1.PurgeMode `json:"purgeMode,omitempty"`

	// PreservedLabelState are the labels, from the policy's statePreservation, to put on the substitute.
	// +optional
	PreservedLabelState map[string]string `json:"preservedLabelState,omitempty"`

	// ClustersBeforeFailover are the clusters the template was on before the failover began.
	// +listType=atomic
	// +optional
	ClustersBeforeFailover []string `json:"clustersBeforeFailover,omitempty"`

	// CreationTimestamp is when the task was made; set by the system.
	// +optional
	CreationTimestamp *metav1.Time `json:"creationTimestamp,omitempty"`
}

// SchedulePriority is where a binding stands in the scheduler's queue.
type SchedulePriority struct {
	// Priority is the PriorityClass's value: bindings of higher priority are scheduled first.
	// +optional
	Priority int32 `json:"priority,omitempty"`
}

// AggregatedStatusItem is a template's status in one cluster.
type AggregatedStatusItem struct {
	// ClusterName is the cluster.
	// +kubebuilder:validation:MinLength=1
	// +required
	ClusterName string `json:"clusterName"`

	// Status is the resource's status in the cluster, as the interpreter reflected it.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Status *runtime.RawExtension `json:"status,omitempty"`

	// Applied is true when the resource was applied to the cluster.
	// +optional
	Applied bool `json:"applied,omitempty"`

	// AppliedMessage explains the apply result, usually the error.
	// +optional
	AppliedMessage string `json:"appliedMessage,omitempty"`

	// Health is the resource's health in the cluster, as the interpreter judged it.
	// +optional
	Health ResourceHealth `json:"health,omitempty"`
}

// ResourceHealth is the health of a resource in a member cluster.
// +kubebuilder:validation:Enum=Healthy;Unhealthy;Unknown
type ResourceHealth string

// The health values.
const (
	ResourceHealthy   ResourceHealth = "Healthy"
	ResourceUnhealthy ResourceHealth = "Unhealthy"
	ResourceUnknown   ResourceHealth = "Unknown"
)
