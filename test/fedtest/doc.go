// Package fedtest sets up federations for tests and the demo: a host and member API servers (real kube-apiserver + etcd),
// fedmesh's CRDs in the host, and each member registered as a Cluster with its own service-account token.
package fedtest
