#!/usr/bin/env bash
# Regenerates what is derived from pkg/apis: deepcopy functions beside the types, and the CRDs in
# charts/fedmesh/crds. The staleness test (pkg/apis) runs this same script into a scratch copy and compares.
# Usage: hack/generate.sh [REPO_ROOT]   (controller-gen from $FEDMESH_BIN_DIR, see hack/build-binaries.sh)
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
bin=${FEDMESH_BIN_DIR:-${FEDMESH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fedmesh}/bin}
cd "$root"
rm -f charts/fedmesh/crds/*.yaml
"$bin/controller-gen" object paths=./pkg/apis/... crd paths=./pkg/apis/... output:crd:artifacts:config=charts/fedmesh/crds
