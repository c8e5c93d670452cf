package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=mc,categories=fedmesh
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.kubernetesVersion`
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.syncMode`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="APIs-Complete",type=string,JSONPath=`.status.conditions[?(@.type=="CompleteAPIEnablements")].status`
// +kubebuilder:printcolumn:name="Region",type=string,JSONPath=`.spec.region`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Cluster is a member cluster: how to reach it, where it is, and what it reported last.
type Cluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is how to reach and describe the cluster.
	// +required
	Spec ClusterSpec `json:"spec"`

	// Status is what the cluster reported last.
	// +optional
	Status ClusterStatus `json:"status,omitempty"`
}

// ClusterSpec describes a member cluster.
// +kubebuilder:validation:XValidation:rule="self.syncMode != 'Push' || (has(self.apiEndpoint) && size(self.apiEndpoint) > 0)",message="apiEndpoint is required when syncMode is Push"
type ClusterSpec struct {
	// ID identifies the cluster across registrations: the UID of its kube-system namespace, as `kubectl fedmesh join`
	// (like karmadactl join) collects it. join and unjoin refuse a Cluster whose ID is not the cluster their
	// kubeconfig reaches; do not change it.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	ID string `json:"id,omitempty"`

	// SyncMode: Push means the federation applies resources to the cluster through its API endpoint; Pull means an
	// agent in the cluster fetches them.
	// +kubebuilder:validation:Enum=Push;Pull
	// +kubebuilder:default=Push
	// +optional
	SyncMode ClusterSyncMode `json:"syncMode,omitempty"`

	// APIEndpoint is the cluster's API server URL, e.g. "https://10.0.0.1:6443". Required for Push. Only https:
	// the mesh proxies front the member at it, and refuse any other.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self == '' || (isURL(self) && url(self).getScheme() == 'https' && url(self).getHost() != '')",message="apiEndpoint must be an https URL, e.g. https://10.0.0.1:6443"
	// +optional
	APIEndpoint string `json:"apiEndpoint,omitempty"`

	// SecretRef names the Secret with the credentials for the cluster: key "token" (a bearer token) and key
	// "caBundle" (the CA that signs the API server's certificate).
	// +optional
	SecretRef *LocalSecretReference `json:"secretRef,omitempty"`

	// ImpersonatorSecretRef names the Secret whose "token" lets the federation impersonate users in the cluster.
	// +optional
	ImpersonatorSecretRef *LocalSecretReference `json:"impersonatorSecretRef,omitempty"`

	// InsecureSkipTLSVerification skips checking the API server's certificate. Insecure; for tests only.
	// +optional
	InsecureSkipTLSVerification bool `json:"insecureSkipTLSVerification,omitempty"`

	// ProxyURL is an HTTP(S) or SOCKS5 proxy to reach the cluster through.
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	ProxyURL string `json:"proxyURL,omitempty"`

	// ProxyHeader are HTTP headers to send to the proxy; several values of one header are comma-separated.
	// +optional
	ProxyHeader map[string]string `json:"proxyHeader,omitempty"`

	// Provider is the cloud provider, e.g. "aws" or "on-prem".
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Provider string `json:"provider,omitempty"`

	// Region is the cluster's region.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Region string `json:"region,omitempty"`

	// Zone is the cluster's zone. Deprecated: use zones.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Zone string `json:"zone,omitempty"`

	// Zones are the failure zones the cluster spans.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Zones []string `json:"zones,omitempty"`

	// Taints keep resources that do not tolerate them off the cluster (NoSchedule) or move them away (NoExecute).
	// A NoExecute taint without timeAdded is stamped by the federation when it first sees it.
	// +listType=atomic
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`

	// ResourceModels are node size classes ("grades") for estimating how many replicas fit, as Karmada's: each
	// grade is a range of cpu, memory and so on, every grade ranging the same resources, each range of a grade
	// starting where the same resource's range of the grade below ends (Karmada's webhook refuses others; the CRD
	// checks only the resources, quantities being too costly for its rules). The cluster controller counts the nodes
	// of each grade (status.resourceSummary.allocatableModelings), and the scheduler fits a replica only on nodes
	// of a grade whose minimum covers its requests. Unset: no grades (Karmada's webhook writes its default grades
	// 0 to 8 instead; a Cluster copied from Karmada carries them), room is estimated from summed resources alone.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self.all(m, self.all(p, p.ranges.size() == m.ranges.size() && p.ranges.all(r, m.ranges.exists(s, s.name == r.name))))",message="every grade must range the same resources"
	// +listType=map
	// +listMapKey=grade
	// +optional
	ResourceModels []ResourceModel `json:"resourceModels,omitempty"`
}

// ClusterSyncMode is how resources reach a member cluster.
type ClusterSyncMode string

// The sync modes.
const (
	Push ClusterSyncMode = "Push"
	Pull ClusterSyncMode = "Pull"
)

// LocalSecretReference names a Secret.
type LocalSecretReference struct {
	// Namespace of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	Namespace string `json:"namespace"`

	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`
}

// The keys of a cluster's credentials Secret.
const (
	SecretTokenKey  = "token"
	SecretCADataKey = "caBundle"
)

// ResourceModel is one grade: nodes whose free resources (allocatable less what their pods request) reach every
// range's min, and not the next grade's.
type ResourceModel struct {
	// Grade orders the models, from 0 for the smallest nodes.
	// +kubebuilder:validation:Minimum=0
	// +required
	Grade int32 `json:"grade"`

	// Ranges bound each resource for this grade.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=4
	// +listType=map
	// +listMapKey=name
	// +required
	Ranges []ResourceModelRange `json:"ranges"`
}

// ResourceModelRange is the half-open range [min, max) of one resource; max must be greater than min. In the highest
// grade, max means no bound.
type ResourceModelRange struct {
	// Name of the resource.
	// +kubebuilder:validation:Enum=cpu;memory;storage;ephemeral-storage
	// +required
	Name corev1.ResourceName `json:"name"`

	// Min is the lower bound, included. The lowest grade's min counts as 0.
	// +required
	Min resource.Quantity `json:"min"`

	// Max is the upper bound, excluded.
	// +required
	Max resource.Quantity `json:"max"`
}

// +kubebuilder:object:root=true

// ClusterList is a list of Clusters.
type ClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Cluster `json:"items"`
}
