package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Placement says which member clusters a resource may go to and how its replicas are divided among them.
// +kubebuilder:validation:XValidation:rule="!(has(self.clusterAffinity) && has(self.clusterAffinities))",message="clusterAffinity and clusterAffinities are mutually exclusive"
type Placement struct {
	// ClusterAffinity restricts the candidate clusters. Unset or empty (and no clusterAffinities) means every
	// cluster is a candidate. Mutually exclusive with clusterAffinities.
	// +optional
	ClusterAffinity *ClusterAffinity `json:"clusterAffinity,omitempty"`

	// ClusterAffinities are ordered groups of clusters. The scheduler tries the first group, and moves on to the
	// next only when the resource cannot be placed within it (e.g. a primary data center, then a public cloud as
	// overflow or disaster recovery). Once scheduled, the scheduler tries the group in use first, then the later
	// groups, then the earlier ones: a binding stays on a later group while it fits. If no group fits, scheduling
	// fails. Mutually exclusive with clusterAffinity.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	ClusterAffinities []ClusterAffinityTerm `json:"clusterAffinities,omitempty"`

	// ClusterTolerations let the resource go to clusters whose taints they tolerate.
	// +listType=atomic
	// +optional
	ClusterTolerations []corev1.Toleration `json:"clusterTolerations,omitempty"`

	// SpreadConstraints spread the resource over groups of clusters (by cluster, region, zone, provider or a
	// label), e.g. "at least 2 regions".
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	// +optional
	SpreadConstraints []SpreadConstraint `json:"spreadConstraints,omitempty"`

	// ReplicaScheduling says what the chosen clusters get of a workload's replicas (Deployments, StatefulSets and
	// any kind whose replicas the interpreter knows). Unset means every cluster gets all replicas.
	// +optional
	ReplicaScheduling *ReplicaSchedulingStrategy `json:"replicaScheduling,omitempty"`
}

// ClusterAffinity selects member clusters. A cluster is selected when it matches every selector that is set, and is
// not excluded. An empty affinity ({}) selects every cluster, as in Karmada.
type ClusterAffinity struct {
	// LabelSelector selects clusters by their labels.
	// +optional
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`

	// FieldSelector selects clusters by spec fields: provider, region or zone.
	// +optional
	FieldSelector *FieldSelector `json:"fieldSelector,omitempty"`

	// ClusterNames selects clusters by name.
	// +kubebuilder:validation:MaxItems=1024
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=atomic
	// +optional
	ClusterNames []string `json:"clusterNames,omitempty"`

	// ExcludeClusters are never selected.
	// +kubebuilder:validation:MaxItems=1024
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=atomic
	// +optional
	ExcludeClusters []string `json:"exclude,omitempty"`
}

// ClusterAffinityTerm is a named group of clusters; a term with no selector is every cluster.
type ClusterAffinityTerm struct {
	// AffinityName names the group; the binding's status reports which group the scheduler used.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +required
	AffinityName string `json:"affinityName"`

	ClusterAffinity `json:",inline"`
}

// FieldSelector selects clusters by fields of their spec.
// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, e.key in ['provider', 'region', 'zone'] && e.operator in ['In', 'NotIn'])",message="fieldSelector keys must be provider, region or zone, with operator In or NotIn"
type FieldSelector struct {
	// MatchExpressions must all hold. Keys are provider, region and zone; operators In and NotIn.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	MatchExpressions []corev1.NodeSelectorRequirement `json:"matchExpressions,omitempty"`
}

// SpreadFieldValue is a cluster field clusters can be grouped by.
// +kubebuilder:validation:Enum=cluster;region;zone;provider
type SpreadFieldValue string

// The fields clusters can be grouped by.
const (
	SpreadByFieldCluster  SpreadFieldValue = "cluster"
	SpreadByFieldRegion   SpreadFieldValue = "region"
	SpreadByFieldZone     SpreadFieldValue = "zone"
	SpreadByFieldProvider SpreadFieldValue = "provider"
)

// SpreadConstraint groups the candidate clusters by a field or a label and bounds how many groups are chosen.
// +kubebuilder:validation:XValidation:rule="!(has(self.spreadByField) && has(self.spreadByLabel))",message="spreadByField and spreadByLabel are mutually exclusive"
// +kubebuilder:validation:XValidation:rule="!has(self.minGroups) || !has(self.maxGroups) || self.minGroups <= self.maxGroups",message="minGroups must not be greater than maxGroups"
type SpreadConstraint struct {
	// SpreadByField groups clusters by a field of their spec. When neither this nor spreadByLabel is set, clusters
	// are grouped by cluster (each cluster is a group).
	// +optional
	SpreadByField SpreadFieldValue `json:"spreadByField,omitempty"`

	// SpreadByLabel groups clusters by the value of this label.
	// +kubebuilder:validation:MaxLength=317
	// +optional
	SpreadByLabel string `json:"spreadByLabel,omitempty"`

	// MaxGroups is the most groups to choose.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxGroups int32 `json:"maxGroups,omitempty"`

	// MinGroups is the fewest groups to choose; scheduling fails if fewer fit. Defaults to 1.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MinGroups int32 `json:"minGroups,omitempty"`
}

// ReplicaSchedulingType is how replicas are given to the chosen clusters.
// +kubebuilder:validation:Enum=Duplicated;Divided
type ReplicaSchedulingType string

// The replica scheduling types.
const (
	// ReplicaSchedulingTypeDuplicated gives every chosen cluster all replicas.
	ReplicaSchedulingTypeDuplicated ReplicaSchedulingType = "Duplicated"
	// ReplicaSchedulingTypeDivided divides the replicas among the chosen clusters.
	ReplicaSchedulingTypeDivided ReplicaSchedulingType = "Divided"
)

// ReplicaDivisionPreference is how divided replicas are shared out.
// +kubebuilder:validation:Enum=Aggregated;Weighted
type ReplicaDivisionPreference string

// The replica division preferences.
const (
	// ReplicaDivisionPreferenceAggregated packs replicas into as few clusters as have room for them.
	ReplicaDivisionPreferenceAggregated ReplicaDivisionPreference = "Aggregated"
	// ReplicaDivisionPreferenceWeighted divides replicas in proportion to cluster weights.
	ReplicaDivisionPreferenceWeighted ReplicaDivisionPreference = "Weighted"
)

// ReplicaSchedulingStrategy says how a workload's replicas are spread over the chosen clusters.
type ReplicaSchedulingStrategy struct {
	// ReplicaSchedulingType: Duplicated gives each chosen cluster the full replica count; Divided splits the
	// replicas among them as replicaDivisionPreference says.
	// +kubebuilder:default=Divided
	// +optional
	ReplicaSchedulingType ReplicaSchedulingType `json:"replicaSchedulingType,omitempty"`

	// ReplicaDivisionPreference applies to Divided: Aggregated packs replicas into as few clusters as have room;
	// Weighted divides them by weightPreference.
	// +optional
	ReplicaDivisionPreference ReplicaDivisionPreference `json:"replicaDivisionPreference,omitempty"`

	// WeightPreference gives the weights for Weighted division. Unset with Weighted means equal weights. It is
	// ignored otherwise (Duplicated, or Aggregated), as in Karmada, whose manifests may carry it there.
	// +optional
	WeightPreference *ClusterPreferences `json:"weightPreference,omitempty"`
}

// ClusterPreferences weighs clusters, statically or by a dynamic factor.
// +kubebuilder:validation:XValidation:rule="has(self.staticWeightList) || has(self.dynamicWeight)",message="weightPreference must set staticWeightList or dynamicWeight"
type ClusterPreferences struct {
	// StaticWeightList gives fixed weights to clusters. A chosen cluster that no entry matches gets no replicas.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=128
	// +listType=atomic
	// +optional
	StaticWeightList []StaticClusterWeight `json:"staticWeightList,omitempty"`

	// DynamicWeight derives weights from the clusters' state, e.g. AvailableReplicas weighs each cluster by how many
	// more replicas it has room for. When set, staticWeightList is ignored.
	// +optional
	DynamicWeight DynamicWeightFactor `json:"dynamicWeight,omitempty"`
}

// StaticClusterWeight weighs the clusters a selector picks.
type StaticClusterWeight struct {
	// TargetCluster selects the clusters this weight is for; empty selects every cluster.
	// +required
	TargetCluster ClusterAffinity `json:"targetCluster"`

	// Weight is the clusters' share relative to the other entries; at least 1 (leave a cluster out with
	// targetCluster or clusterAffinity instead of weighing it 0).
	// +kubebuilder:validation:Minimum=1
	// +required
	Weight int64 `json:"weight"`
}

// DynamicWeightFactor is what dynamic weights are derived from.
// +kubebuilder:validation:Enum=AvailableReplicas
type DynamicWeightFactor string

// DynamicWeightByAvailableReplicas weighs clusters by how many more replicas they can run.
const DynamicWeightByAvailableReplicas DynamicWeightFactor = "AvailableReplicas"
