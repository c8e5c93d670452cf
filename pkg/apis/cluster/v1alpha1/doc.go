// Package v1alpha1 is the cluster.fedmesh.io API: Cluster, a member cluster the federation propagates to.
//
// +kubebuilder:object:generate=true
// +groupName=cluster.fedmesh.io
package v1alpha1
