package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=ric,categories=fedmesh
// +kubebuilder:printcolumn:name="Target-API-Version",type=string,JSONPath=`.spec.target.apiVersion`
// +kubebuilder:printcolumn:name="Target-Kind",type=string,JSONPath=`.spec.target.kind`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ResourceInterpreterCustomization teaches the federation about one kind with Lua scripts: its replicas and what
// each replica needs, how to set its replicas, which member-cluster changes to keep, its status, health,
// dependencies and components. Scripts here take precedence over interpreter webhooks and the built-in rules.
// Scripts written for Karmada run unchanged.
type ResourceInterpreterCustomization struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the kind and its scripts.
	// +required
	Spec ResourceInterpreterCustomizationSpec `json:"spec"`
}

// ResourceInterpreterCustomizationSpec is a kind and the scripts that interpret it.
type ResourceInterpreterCustomizationSpec struct {
	// Target is the kind the scripts interpret.
	// +required
	Target CustomizationTarget `json:"target"`

	// Customizations are the scripts, one per operation; an operation without a script falls back to webhooks and
	// the built-in rules.
	// +required
	Customizations CustomizationRules `json:"customizations"`
}

// CustomizationTarget is a kind, by API version.
type CustomizationTarget struct {
	// APIVersion of the kind, e.g. "apps.kruise.io/v1alpha1".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +required
	APIVersion string `json:"apiVersion"`

	// Kind, e.g. "CloneSet".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	Kind string `json:"kind"`
}

// +kubebuilder:object:root=true

// ResourceInterpreterCustomizationList is a list of ResourceInterpreterCustomizations.
type ResourceInterpreterCustomizationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ResourceInterpreterCustomization `json:"items"`
}
