// Package v1alpha1 is the work.fedmesh.io API: ResourceBinding ties a resource template to its placement and
// scheduling result, and Work carries the manifests for one member cluster. A namespaced template, its binding and
// its Works all live in the template's namespace, so one shard owns the whole pipeline; the binding and Works of a
// cluster-scoped template live in the system namespace (fedmesh-system), owned by one shard too. There is no
// ClusterResourceBinding, unlike Karmada: cluster-scoped, it would be every shard's or need a shard of its own.
//
// +kubebuilder:object:generate=true
// +groupName=work.fedmesh.io
package v1alpha1
