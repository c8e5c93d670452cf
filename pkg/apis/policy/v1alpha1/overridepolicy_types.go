package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=op,categories=fedmesh
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// OverridePolicy changes resource templates of its own namespace on their way to particular member clusters:
// another image registry in one region, other arguments, labels, or any field by JSON patch.
type OverridePolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the policy.
	// +required
	Spec OverrideSpec `json:"spec"`
}

// OverrideSpec is what an (Cluster)OverridePolicy selects and how it changes it. Of the policies that select a
// template, ClusterOverridePolicies apply first, then OverridePolicies; within each, as in Karmada, those selecting
// by kind alone first, then by labels, then by name (the most precise has the last word), and by name within that.
type OverrideSpec struct {
	// ResourceSelectors select the templates to override; empty means every template the policy can see.
	// +kubebuilder:validation:MaxItems=256
	// +listType=atomic
	// +optional
	ResourceSelectors []ResourceSelector `json:"resourceSelectors,omitempty"`

	// OverrideRules are applied in order; each applies to the clusters its targetCluster selects.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +required
	OverrideRules []RuleWithCluster `json:"overrideRules"`
}

// RuleWithCluster is a set of overriders for some clusters.
type RuleWithCluster struct {
	// TargetCluster selects the clusters the overriders apply to; unset or empty means every cluster.
	// +optional
	TargetCluster *ClusterAffinity `json:"targetCluster,omitempty"`

	// Overriders are the changes.
	// +required
	Overriders Overriders `json:"overriders"`
}

// +kubebuilder:object:root=true

// OverridePolicyList is a list of OverridePolicies.
type OverridePolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OverridePolicy `json:"items"`
}
