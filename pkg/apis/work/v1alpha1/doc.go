// Package v1alpha1 is the work.fedmesh.io API: ResourceBinding and ClusterResourceBinding tie a resource template to
// its placement and scheduling result, and Work carries the manifests for one member cluster. A namespaced template,
// its binding and its Works all live in the template's namespace, so one shard owns the whole pipeline.
//
// +kubebuilder:object:generate=true
// +groupName=work.fedmesh.io
package v1alpha1
