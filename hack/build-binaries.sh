#!/usr/bin/env bash
# Builds the real Kubernetes parts fedmesh's tests and demo run (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kwok and its stages, controller-gen, helm) from the Go module proxy into a cache outside the repo.
# Versions come from hack/k8s/go.mod and hack/tools/go.mod; each set is built once into a directory named by its
# versions, and $CACHE/bin links to the current set. A warm run only checks the stamps.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${FEDMESH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fedmesh}
bin=$cache/bin
mkdir -p "$bin"

modversion() { (cd "$1" && go list -m -f '{{.Version}}' "$2"); }

k8s=$(modversion "$here/k8s" k8s.io/kubernetes)
etcd=$(modversion "$here/k8s" go.etcd.io/etcd/server/v3)
kwok=$(modversion "$here/tools" sigs.k8s.io/kwok)
cgen=$(modversion "$here/tools" sigs.k8s.io/controller-tools)
helm=$(modversion "$here/tools" helm.sh/helm/v3)

# missing DIR [FILE...]: whether DIR still has to be built (incomplete, or a FILE is not in it).
# build DIR MODDIR LDFLAGS TARGET...: builds TARGETs of the module in MODDIR into DIR.tmp.
# finish DIR: moves DIR.tmp into place, marked complete.
missing() {
	local dir=$1; shift
	[ -f "$dir/.complete" ] || return 0
	for f in "$@"; do [ -e "$dir/$f" ] || return 0; done
	return 1
}
build() {
	local dir=$1 mod=$2 ldflags=$3; shift 3
	echo "building $(basename "$dir") (first time only; this takes minutes)" >&2
	rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
	(cd "$mod" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $ldflags" -o "$dir.tmp/" "$@")
}
finish() { touch "$1.tmp/.complete" && rm -rf "$1" && mv "$1.tmp" "$1"; }

cb=k8s.io/component-base/version
minor=${k8s#v1.}; minor=${minor%%.*}
k8sflags="-X $cb.gitVersion=$k8s -X $cb.gitMajor=1 -X $cb.gitMinor=$minor -X $cb.gitTreeState=clean"
k8sflags+=" -X $cb.buildDate=1970-01-01T00:00:00Z -X $cb.gitCommit=0000000000000000000000000000000000000000"
k8sdir=$cache/kubernetes-$k8s-etcd-$etcd
k8sbins=(kube-apiserver kube-controller-manager kube-scheduler kubectl etcd)
if missing "$k8sdir" "${k8sbins[@]}"; then
	build "$k8sdir" "$here/k8s" "$k8sflags" "${k8sbins[@]/#/./}"
	finish "$k8sdir"
fi

kwokdir=$cache/kwok-$kwok
if missing "$kwokdir"; then
	build "$kwokdir" "$here/tools" "" sigs.k8s.io/kwok/cmd/kwok
	# kwok ships no stages in its binary: concatenate the "fast" ones so nodes heartbeat and pods go Running.
	src=$(cd "$here/tools" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage
	for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
		pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
		cat "$src/$f"; echo "---"
	done >"$kwokdir.tmp/stages.yaml"
	finish "$kwokdir"
fi

cgendir=$cache/controller-gen-$cgen
if missing "$cgendir"; then
	build "$cgendir" "$here/tools" "" sigs.k8s.io/controller-tools/cmd/controller-gen
	finish "$cgendir"
fi

helmdir=$cache/helm-$helm
if missing "$helmdir"; then
	# Stamped like helm's own release build: its version, and the Kubernetes version of its client libraries,
	# which `helm template` and `helm lint` assume when there is no cluster to ask.
	cg=$(modversion "$here/tools" k8s.io/client-go); cgminor=${cg#v0.}; cgminor=${cgminor%%.*}
	helmflags="-X helm.sh/helm/v3/internal/version.version=$helm"
	for p in pkg/chartutil pkg/lint/rules; do
		helmflags+=" -X helm.sh/helm/v3/$p.k8sVersionMajor=1 -X helm.sh/helm/v3/$p.k8sVersionMinor=$cgminor"
	done
	build "$helmdir" "$here/tools" "$helmflags" helm.sh/helm/v3/cmd/helm
	finish "$helmdir"
fi

for f in "$k8sdir"/* "$kwokdir"/* "$cgendir"/* "$helmdir"/*; do
	ln -sfn "$f" "$bin/$(basename "$f")"
done
echo "$bin"
