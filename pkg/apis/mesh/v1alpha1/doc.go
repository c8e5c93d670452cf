// Package v1alpha1 is the mesh.fedmesh.io API: ShardingConfig, which splits an operator into shards that each own a
// set of namespace hash ranges (and canaries a new operator version namespace by namespace), and TrafficPolicy, the
// rate limits, in-flight caps, circuit breakers, deny rules and faults the proxy sidecar applies to API traffic.
//
// +kubebuilder:object:generate=true
// +groupName=mesh.fedmesh.io
package v1alpha1
