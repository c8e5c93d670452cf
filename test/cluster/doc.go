// Package cluster runs real Kubernetes control planes on loopback for fedmesh's tests and demo: etcd and
// kube-apiserver (with the ShardedListAndWatch gate on by default), and optionally kube-controller-manager,
// kube-scheduler and kwok with fake nodes so workloads get Running pods. A Federation is one host plus members.
//
// The binaries are built from the Go module proxy by hack/build-binaries.sh into a cache outside the repo.
// Every process is killed when the test process dies, and Stop removes all state, so failed tests leak nothing.
package cluster
