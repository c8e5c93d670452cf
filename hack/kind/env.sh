# Shared by up.sh and down.sh: the kind version, the clusters' names and where their kubeconfigs go.
# kind is run from the Go module proxy, so it is not a dependency of fedmesh's go.mod.
KIND_VERSION=${KIND_VERSION:-v0.33.0}
kind() { go run "sigs.k8s.io/kind@$KIND_VERSION" "$@"; }
HOST_CLUSTER=fedmesh-host
MEMBERS=(member1 member2)
# member1 lives in the kind cluster fedmesh-member1, and so on.
kind_name() { echo "fedmesh-$1"; }
KIND_DIR=${KIND_DIR:-${FEDMESH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fedmesh}/kind}
