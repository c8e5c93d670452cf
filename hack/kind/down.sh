#!/usr/bin/env bash
# `make kind-down`: deletes the kind clusters of up.sh and their kubeconfigs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/env.sh"
for c in "$HOST_CLUSTER" $(for m in "${MEMBERS[@]}"; do kind_name "$m"; done); do
	kind delete cluster --name "$c"
	rm -f "$KIND_DIR/$c.kubeconfig"
done
