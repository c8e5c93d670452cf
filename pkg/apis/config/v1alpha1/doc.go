// Package v1alpha1 is the config.fedmesh.io API: ResourceInterpreterCustomization (Lua scripts that teach the
// federation a kind's replicas, status, health and dependencies) and ResourceInterpreterWebhookConfiguration (webhooks
// that answer the same questions). Karmada's scripts and webhook configurations work unchanged.
//
// +kubebuilder:object:generate=true
// +groupName=config.fedmesh.io
package v1alpha1
