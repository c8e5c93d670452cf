// Package apis holds fedmesh's Kubernetes API types, one package per group and version, and AddToScheme, which
// registers every group at once.
package apis
