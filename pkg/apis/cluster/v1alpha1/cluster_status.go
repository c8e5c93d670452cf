package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterStatus is what a member cluster reported last.
type ClusterStatus struct {
	// KubernetesVersion is the version of the cluster's API server.
	// +optional
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`

	// APIEnablements are the API resources the cluster serves, by group and version.
	// +listType=atomic
	// +optional
	APIEnablements []APIEnablement `json:"apiEnablements,omitempty"`

	// Conditions: Ready (the API server answers its health check) and CompleteAPIEnablements (apiEnablements lists
	// every group the member serves: False when its discovery of some failed).
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// NodeSummary counts the cluster's nodes.
	// +optional
	NodeSummary *NodeSummary `json:"nodeSummary,omitempty"`

	// ResourceSummary sums the cluster's resources.
	// +optional
	ResourceSummary *ResourceSummary `json:"resourceSummary,omitempty"`
}

// ClusterConditionReady is the condition type that is true while the cluster is healthy.
const ClusterConditionReady = "Ready"

// ClusterConditionCompleteAPIEnablements is the condition type that is true while status.apiEnablements is the
// member's whole list: False when discovery failed for some groups (an aggregated API down), whose kinds may then
// be missing, and the scheduler keeps a binding on such a cluster though its list lacks the binding's kind. As
// Karmada's condition of the same name.
const ClusterConditionCompleteAPIEnablements = "CompleteAPIEnablements"

// APIEnablement is the resources one group version serves.
type APIEnablement struct {
	// GroupVersion, e.g. "apps/v1".
	// +required
	GroupVersion string `json:"groupVersion"`

	// Resources served in the group version.
	// +listType=atomic
	// +optional
	Resources []APIResource `json:"resources,omitempty"`
}

// APIResource is a served resource.
type APIResource struct {
	// Name is the plural resource name, e.g. "deployments".
	// +required
	Name string `json:"name"`

	// Kind is the resource's kind, e.g. "Deployment".
	// +required
	Kind string `json:"kind"`
}

// NodeSummary counts nodes.
type NodeSummary struct {
	// TotalNum is the number of nodes.
	// +optional
	TotalNum int32 `json:"totalNum,omitempty"`

	// ReadyNum is the number of ready nodes.
	// +optional
	ReadyNum int32 `json:"readyNum,omitempty"`
}

// ResourceSummary sums a cluster's resources over its nodes and pods.
type ResourceSummary struct {
	// Allocatable is the total allocatable resources of the nodes.
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`

	// Allocating is the total requests of pods waiting to be scheduled.
	// +optional
	Allocating corev1.ResourceList `json:"allocating,omitempty"`

	// Allocated is the total requests of scheduled pods.
	// +optional
	Allocated corev1.ResourceList `json:"allocated,omitempty"`

	// AllocatableModelings count the nodes in each resource-model grade.
	// +listType=atomic
	// +optional
	AllocatableModelings []AllocatableModeling `json:"allocatableModelings,omitempty"`
}

// AllocatableModeling is the number of nodes whose free resources fall in one grade.
type AllocatableModeling struct {
	// Grade is the resource model's grade.
	// +kubebuilder:validation:Minimum=0
	// +required
	Grade int32 `json:"grade"`

	// Count is the number of nodes.
	// +kubebuilder:validation:Minimum=0
	// +required
	Count int32 `json:"count"`
}
