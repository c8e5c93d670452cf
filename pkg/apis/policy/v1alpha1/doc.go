// Package v1alpha1 is the policy.fedmesh.io API: PropagationPolicy and ClusterPropagationPolicy say which resource
// templates go to which member clusters and how replicas are divided; OverridePolicy and ClusterOverridePolicy change
// a template per cluster. Field names and meanings follow Karmada's policy.karmada.io/v1alpha1, so a Karmada manifest
// ports by changing its apiVersion.
//
// +kubebuilder:object:generate=true
// +groupName=policy.fedmesh.io
package v1alpha1
