package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=shc,categories=fedmesh
// +kubebuilder:subresource:status
// +kubebuilder:validation:XValidation:rule="self.spec.shards == oldSelf.spec.shards || (!has(self.spec.canary) && !has(oldSelf.spec.canary) && (!has(oldSelf.status) || !has(oldSelf.status.canary)))",message="spec.shards cannot change while a canary is set or still owns namespaces (status.canary): its pods carry the ordinal spec.shards and would become a stable shard; remove spec.canary, wait until status.canary is gone, then reshard"
// +kubebuilder:printcolumn:name="Shards",type=integer,JSONPath=`.spec.shards`
// +kubebuilder:printcolumn:name="Filter",type=string,JSONPath=`.spec.filterMode`
// +kubebuilder:printcolumn:name="Epoch",type=integer,JSONPath=`.status.epoch`
// +kubebuilder:printcolumn:name="Ready-Proxies",type=integer,JSONPath=`.status.readyProxies`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ShardingConfig splits one operator into shards. Each shard is a set of the operator's pods with the same stable
// ordinal; it owns a set of ranges of namespace hashes, sees only the objects of its namespaces and may write only
// to them. The manager keeps the assignment of ranges to shards in the status and hands ranges over safely when
// shards come and go. A canary shard running a new operator version can take namespaces step by step.
type ShardingConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired sharding.
	// +required
	Spec ShardingConfigSpec `json:"spec"`

	// Status is the assignment the manager computed and what the proxies acknowledged.
	// +optional
	Status ShardingConfigStatus `json:"status,omitempty"`
}

// ShardingConfigSpec is the desired sharding of one operator.
// +kubebuilder:validation:XValidation:rule="!has(self.clusterScopedShard) || self.clusterScopedShard < self.shards",message="clusterScopedShard must be less than shards"
type ShardingConfigSpec struct {
	// Selector selects the operator's pods, in this object's namespace, that form the shards. Canary pods are
	// selected by canary.selector and must not match this selector.
	// +required
	Selector metav1.LabelSelector `json:"selector"`

	// Shards is the number of shards. Adding a shard moves about 1/shards of the namespaces. It cannot change
	// while a canary is set or still owns namespaces.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=256
	// +required
	Shards int32 `json:"shards"`

	// ShardOrdinalLabel is the pod label holding the pod's stable shard ordinal, 0 to shards-1. The default is the
	// label the StatefulSet controller sets; pods of a Deployment need a label of their own.
	// +kubebuilder:default="apps.kubernetes.io/pod-index"
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	// +optional
	ShardOrdinalLabel string `json:"shardOrdinalLabel,omitempty"`

	// Resources lists the namespaced resources whose lists and watches are restricted to the shard's namespaces.
	// Empty means every namespaced resource. Writes outside the shard's namespaces are refused for every resource.
	// +kubebuilder:validation:MaxItems=128
	// +listType=map
	// +listMapKey=group
	// +listMapKey=resource
	// +optional
	Resources []GroupResource `json:"resources,omitempty"`

	// ClusterScopedShard is the shard that owns cluster-scoped objects and may write them.
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +optional
	ClusterScopedShard *int32 `json:"clusterScopedShard,omitempty"`

	// ClusterScoped is how the other shards treat cluster-scoped objects: "designated" (they see empty lists and
	// their writes are refused; reads of single objects pass) or "shared" (every shard lists, watches and writes
	// them, for operators such as the federator whose every shard needs the cluster-wide objects, e.g. Clusters).
	// +kubebuilder:validation:Enum=designated;shared
	// +kubebuilder:default=designated
	// +optional
	ClusterScoped string `json:"clusterScoped,omitempty"`

	// LeaderElection names the operator's leader-election Lease. The proxy renames it per shard
	// (<leaseName>-shard-<ordinal>), so every shard elects its own leader. Unset means the operator does not elect.
	// +optional
	LeaderElection *LeaderElection `json:"leaderElection,omitempty"`

	// FilterMode chooses how lists and watches are restricted: "server" asks the API server to filter by namespace
	// hash (needs Kubernetes >= 1.36 with ShardedListAndWatch), "label" selects on shard labels the manager stamps,
	// "client" has the proxy filter responses itself, and "auto" picks the best one the server supports, per resource.
	// +kubebuilder:default=auto
	// +optional
	FilterMode FilterMode `json:"filterMode,omitempty"`

	// Canary moves namespaces to a canary version of the operator, step by step, and back on failure.
	// +optional
	Canary *Canary `json:"canary,omitempty"`

	// TrafficPolicyRef names a TrafficPolicy in this namespace that every shard's proxy applies.
	// +optional
	TrafficPolicyRef *LocalObjectReference `json:"trafficPolicyRef,omitempty"`
}

// GroupResource names a resource by API group and plural name.
type GroupResource struct {
	// Group is the API group; "" is the core group.
	// +kubebuilder:default=""
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^$|^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	Group string `json:"group"`

	// Resource is the plural resource name, e.g. "pods" or "deployments".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Resource string `json:"resource"`
}

// LeaderElection names the Lease an operator elects its leader with.
type LeaderElection struct {
	// LeaseName is the name of the operator's Lease: a DNS-1123 subdomain, as each shard's
	// <leaseName>-shard-<ordinal> must be too. At most 200 characters, which leaves room for the longest suffix
	// ("-shard-256") within a name's 253.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=200
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +required
	LeaseName string `json:"leaseName"`

	// LeaseNamespace is the namespace of the Lease; empty means the operator's own namespace.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$`
	// +optional
	LeaseNamespace string `json:"leaseNamespace,omitempty"`
}

// FilterMode is how a shard's lists and watches are restricted to its namespaces.
// +kubebuilder:validation:Enum=auto;server;label;client
type FilterMode string

// The filter modes.
const (
	FilterModeAuto   FilterMode = "auto"
	FilterModeServer FilterMode = "server"
	FilterModeLabel  FilterMode = "label"
	FilterModeClient FilterMode = "client"
)

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	// Name of the object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`
}

// ShardingConfigStatus is the assignment the manager published and the proxies' view of it.
type ShardingConfigStatus struct {
	// ObservedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Epoch increases with every published assignment. Proxies acknowledge assignments by epoch.
	// +optional
	Epoch int64 `json:"epoch,omitempty"`

	// Assignment maps shards to the namespace-hash ranges they own.
	// +kubebuilder:validation:MaxItems=257
	// +listType=atomic
	// +optional
	Assignment []ShardAssignment `json:"assignment,omitempty"`

	// Proxies are the proxy sidecars the manager serves, with the version each acknowledged.
	// +listType=atomic
	// +optional
	Proxies []ProxyStatus `json:"proxies,omitempty"`

	// ReadyProxies counts the proxies that acknowledged the current epoch (to the previous manager leader, for a
	// proxy the current one has not heard from since its election).
	// +optional
	ReadyProxies int32 `json:"readyProxies,omitempty"`

	// Canary is the progress of the canary, if one is configured.
	// +optional
	Canary *CanaryStatus `json:"canary,omitempty"`

	// Conditions: Ready (every range has exactly one owner, acknowledged by every proxy in contact; a proxy out of
	// contact past its lease is not waited for, and the message counts it) and Progressing (a handover is under
	// way). After a manager leader change with nothing to move, Ready says AwaitingProxies until the proxies
	// reconnect.
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}

// ShardAssignment is what one shard owns.
type ShardAssignment struct {
	// Shard is the shard ordinal.
	// +kubebuilder:validation:Minimum=0
	// +required
	Shard int32 `json:"shard"`

	// Canary marks the canary shard.
	// +optional
	Canary bool `json:"canary,omitempty"`

	// Ranges are the namespace-hash ranges the shard owns.
	// +kubebuilder:validation:MaxItems=2048
	// +listType=atomic
	// +optional
	Ranges []HashRange `json:"ranges,omitempty"`

	// Namespaces counts the existing namespaces whose hash falls in the ranges.
	// +optional
	Namespaces int32 `json:"namespaces,omitempty"`

	// Objects counts the sharded objects in those namespaces, as last measured.
	// +optional
	Objects int64 `json:"objects,omitempty"`
}

// HashRange is the half-open range [start, end) of 64-bit FNV-1a namespace hashes, written as 0x and 16 hex digits;
// end may be 0x10000000000000000 (2^64).
// +kubebuilder:validation:XValidation:rule="self.end == '0x10000000000000000' || self.start < self.end",message="range start must be below its end"
type HashRange struct {
	// Start is the first hash in the range.
	// +kubebuilder:validation:MaxLength=18
	// +kubebuilder:validation:Pattern=`^0x[0-9a-f]{16}$`
	// +required
	Start string `json:"start"`

	// End is the first hash after the range.
	// +kubebuilder:validation:MaxLength=19
	// +kubebuilder:validation:Pattern=`^0x([0-9a-f]{16}|10000000000000000)$`
	// +required
	End string `json:"end"`
}

// ProxyStatus is one proxy sidecar as the manager sees it.
type ProxyStatus struct {
	// Pod is the name of the proxy's pod.
	// +required
	Pod string `json:"pod"`

	// Shard is the pod's shard ordinal.
	// +required
	Shard int32 `json:"shard"`

	// AckedVersion is the last configuration version the proxy accepted (kept from the previous manager leader
	// while the current one waits for the same pod, by PodUID, to reconnect).
	// +optional
	AckedVersion string `json:"ackedVersion,omitempty"`

	// NackReason is why the proxy refused the latest version of its ownership, if it did.
	// +optional
	NackReason string `json:"nackReason,omitempty"`

	// TrafficNackReason is why the proxy refused the latest version of the TrafficPolicy, if it did; it keeps
	// enforcing the last one it accepted.
	// +optional
	TrafficNackReason string `json:"trafficNackReason,omitempty"`

	// Stray marks a proxy that serves a shard of this ShardingConfig for no member pod: the proxy of a pod deleted
	// with --force (its containers may still run), of a pod relabeled out of spec.selector or of its ordinal, or
	// the previous process of a pod name. A handover waits for it while it is connected and for the proxy lease
	// after.
	// +optional
	Stray bool `json:"stray,omitempty"`

	// PodUID is the UID of the proxy's pod: a stray's may share its name with a member's, and a member's tells a new
	// manager leader whether the pod is still the one whose acknowledgement the status keeps.
	// +optional
	PodUID types.UID `json:"podUID,omitempty"`
}

// +kubebuilder:object:root=true

// ShardingConfigList is a list of ShardingConfigs.
type ShardingConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ShardingConfig `json:"items"`
}
