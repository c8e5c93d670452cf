package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ClusterLabel is the label every Work carries with the name of its member cluster (spec.clusterName, shortened
// with a hash when longer than a label value may be), so a cluster's Works can be listed by label selector.
const ClusterLabel = "work.fedmesh.io/cluster"

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=wk,categories=fedmesh
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterName`
// +kubebuilder:printcolumn:name="Applied",type=string,JSONPath=`.status.conditions[?(@.type=="Applied")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Work is what the federation applies to one member cluster for one binding: the final manifests, with overrides
// applied. Unlike Karmada, where a Work's namespace names its cluster, a Work lives beside its binding, in its
// template's namespace (fedmesh-system for a cluster-scoped template), and names its cluster in spec.clusterName
// and in the work.fedmesh.io/cluster label, so that one shard owns everything about a namespace.
type Work struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the cluster and the manifests.
	// +required
	Spec WorkSpec `json:"spec"`

	// Status is the result of applying the manifests and their state in the cluster.
	// +optional
	Status WorkStatus `json:"status,omitempty"`
}

// WorkSpec is what to apply to which cluster.
type WorkSpec struct {
	// ClusterName is the member cluster the manifests are applied to. It cannot change.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterName is immutable"
	// +required
	ClusterName string `json:"clusterName"`

	// Workload holds the manifests.
	// +required
	Workload WorkloadTemplate `json:"workload"`

	// SuspendDispatching, when true, stops applying changes to the cluster; the resources there are left as they are.
	// +optional
	SuspendDispatching *bool `json:"suspendDispatching,omitempty"`

	// PreserveResourcesOnDeletion keeps the resources in the cluster when the Work is deleted.
	// +optional
	PreserveResourcesOnDeletion *bool `json:"preserveResourcesOnDeletion,omitempty"`
}

// WorkloadTemplate holds the manifests of a Work.
type WorkloadTemplate struct {
	// Manifests are the complete Kubernetes objects to apply.
	// +kubebuilder:validation:MinItems=1
	// +listType=atomic
	// +required
	Manifests []Manifest `json:"manifests"`
}

// Manifest is one complete Kubernetes object (apiVersion, kind, metadata and the rest).
type Manifest struct {
	// +kubebuilder:validation:EmbeddedResource
	// +kubebuilder:pruning:PreserveUnknownFields
	runtime.RawExtension `json:",inline"`
}

// WorkStatus is the result of applying a Work.
type WorkStatus struct {
	// Conditions: Applied (every manifest was applied), Progressing, Available (every resource exists in the
	// cluster) and Degraded.
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// ManifestStatuses are the state of each manifest's resource in the cluster.
	// +listType=atomic
	// +optional
	ManifestStatuses []ManifestStatus `json:"manifestStatuses,omitempty"`
}

// The condition types of Works.
const (
	WorkApplied     = "Applied"
	WorkProgressing = "Progressing"
	WorkAvailable   = "Available"
	WorkDegraded    = "Degraded"
)

// ManifestStatus is the state of one manifest's resource in the cluster.
type ManifestStatus struct {
	// Identifier says which manifest this is.
	// +required
	Identifier ResourceIdentifier `json:"identifier"`

	// Status is the resource's status, as the interpreter reflected it.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Status *runtime.RawExtension `json:"status,omitempty"`

	// Health is the resource's health, as the interpreter judged it.
	// +optional
	Health ResourceHealth `json:"health,omitempty"`
}

// ResourceIdentifier identifies a manifest of a Work and the resource it became.
type ResourceIdentifier struct {
	// Ordinal is the manifest's index in spec.workload.manifests, so a manifest that cannot be parsed can still be
	// reported.
	// +kubebuilder:validation:Minimum=0
	// +required
	Ordinal int32 `json:"ordinal"`

	// Group of the resource; empty for the core group.
	// +optional
	Group string `json:"group,omitempty"`

	// Version of the resource.
	// +required
	Version string `json:"version"`

	// Kind of the resource.
	// +required
	Kind string `json:"kind"`

	// Resource is the plural resource name.
	// +required
	Resource string `json:"resource"`

	// Namespace of the resource; empty for a cluster-scoped one.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Name of the resource.
	// +required
	Name string `json:"name"`
}

// +kubebuilder:object:root=true

// WorkList is a list of Works.
type WorkList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Work `json:"items"`
}
