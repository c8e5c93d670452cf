#!/usr/bin/env bash
# `make kind-up`: kind clusters fedmesh-host, fedmesh-member1 and fedmesh-member2; the images
# $IMAGE/{manager,federator,proxy}:$IMAGE_TAG (built by `make images`) loaded into the host; the chart installed there; both members joined; and the demo app of
# docs/examples/app.yaml propagated. Needs Docker, Go and helm (PATH or $FEDMESH_BIN_DIR). Re-running it is safe.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
source "$here/env.sh"
: "${IMAGE:?set IMAGE=repository and IMAGE_TAG=tag (make kind-up does)}"
: "${IMAGE_TAG:?set IMAGE=repository and IMAGE_TAG=tag (make kind-up does)}"

helm=$(command -v helm || echo "${FEDMESH_BIN_DIR:-${FEDMESH_CACHE:-$HOME/.cache/fedmesh}/bin}/helm")
[ -x "$helm" ] || { echo "kind-up needs helm: none in PATH or the binary cache (make binaries)" >&2; exit 1; }
mkdir -p "$KIND_DIR" "$root/bin"

for c in "$HOST_CLUSTER" $(for m in "${MEMBERS[@]}"; do kind_name "$m"; done); do
	if ! kind get clusters | grep -qx "$c"; then
		kind create cluster --name "$c" --config "$here/cluster.yaml" --wait 120s
	fi
	kind get kubeconfig --name "$c" >"$KIND_DIR/$c.kubeconfig"
done
host="$KIND_DIR/$HOST_CLUSTER.kubeconfig"

echo "loading $IMAGE/{manager,federator,proxy}:$IMAGE_TAG into $HOST_CLUSTER and installing the chart"
for image in manager federator proxy; do
	kind load docker-image "$IMAGE/$image:$IMAGE_TAG" --name "$HOST_CLUSTER"
done
"$helm" upgrade --install fedmesh "$root/charts/fedmesh" --kubeconfig "$host" \
	--namespace fedmesh-system --create-namespace \
	--set image.repository="$IMAGE" --set image.tag="$IMAGE_TAG" --wait --timeout 5m

(cd "$root" && go build -o bin/ ./cmd/kubectl-fedmesh)
for m in "${MEMBERS[@]}"; do
	"$root/bin/kubectl-fedmesh" --host-kubeconfig "$host" join "$m" --kubeconfig "$KIND_DIR/$(kind_name "$m").kubeconfig"
	# join records the address this machine reaches the member at; the federator's pods reach it by the
	# control-plane container's name on kind's Docker network (the name is in the member's serving certificate).
	kubectl --kubeconfig "$host" patch cluster "$m" --type merge \
		-p "{\"spec\":{\"apiEndpoint\":\"https://$(kind_name "$m")-control-plane:6443\"}}"
done

# The members first: a divided workload stays on the clusters that were Ready when it was placed.
kubectl --kubeconfig "$host" wait --for=condition=Ready cluster --all --timeout 2m
kubectl --kubeconfig "$host" apply -f "$root/docs/examples/app.yaml"
echo "waiting for the demo app to be available in the members"
for m in "${MEMBERS[@]}"; do
	until kubectl --kubeconfig "$KIND_DIR/$(kind_name "$m").kubeconfig" -n demo wait --for=condition=Available \
		deployment/web --timeout 10s 2>/dev/null; do sleep 5; done
done
"$root/bin/kubectl-fedmesh" --host-kubeconfig "$host" get deployment web -n demo
echo "the host's kubeconfig: $host (members' beside it); make kind-down deletes the clusters"
