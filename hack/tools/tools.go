//go:build tools

// Package tools pins the versions of the helper programs fedmesh builds from the module proxy (kwok,
// controller-gen, helm). It is its own module so the product's go.mod carries none of their dependencies.
package tools

import (
	_ "helm.sh/helm/v3/cmd/helm"
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
