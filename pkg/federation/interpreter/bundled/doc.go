// Package bundled is the layer of Lua customizations shipped inside fedmesh for well-known CRDs (OpenKruise
// CloneSet and Advanced StatefulSet, Argo Workflow), so that they federate without users writing scripts.
// Users' own ResourceInterpreterCustomizations come before this layer in the chain and override it.
package bundled
