package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=ric,categories=fedmesh
// +kubebuilder:printcolumn:name="Target-API-Version",type=string,JSONPath=`.spec.target.apiVersion`
// +kubebuilder:printcolumn:name="Target-Kind",type=string,JSONPath=`.spec.target.kind`
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].reason`
// +kubebuilder:printcolumn:name="Serving",type=integer,JSONPath=`.status.servedGeneration`,description="The generation whose scripts serve; empty when none does."
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Accepted")].message`
// +kubebuilder:subresource:status

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

	// Status says whether the spec serves, and keeps its last accepted version.
	// +optional
	Status ResourceInterpreterCustomizationStatus `json:"status,omitempty"`
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

// ResourceInterpreterCustomizationStatus is written by the federation: whether the current spec is accepted, which
// generation serves, and the last accepted version of the spec.
type ResourceInterpreterCustomizationStatus struct {
	// ObservedGeneration is the generation of the spec that the conditions speak of.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// ServedGeneration is the generation whose scripts serve: the spec's while it is accepted, LastAccepted's while
	// the spec is refused; zero when none serves.
	// +optional
	ServedGeneration int64 `json:"servedGeneration,omitempty"`

	// LastAccepted is the last version of the spec that was accepted. While a later version is refused it serves
	// in its place, in every federator: a restarted one, and each shard.
	// +optional
	LastAccepted *AcceptedVersion `json:"lastAccepted,omitempty"`

	// Conditions: Accepted says whether the current spec serves, and if not why.
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}

// AcceptedVersion is a copy of an accepted spec.
type AcceptedVersion struct {
	// Generation of the spec when it was accepted.
	// +required
	Generation int64 `json:"generation"`

	// Spec is the spec as it was then.
	// +required
	Spec ResourceInterpreterCustomizationSpec `json:"spec"`
}

// The Accepted condition of a ResourceInterpreterCustomization, and its reasons.
const (
	// CustomizationConditionAccepted is True when the current spec serves.
	CustomizationConditionAccepted = "Accepted"
	// CustomizationReasonAccepted: every script loads, and no other customization defines the same operations.
	CustomizationReasonAccepted = "Accepted"
	// CustomizationReasonInvalidScript: a script does not load (it does not compile, or does not define its
	// function).
	CustomizationReasonInvalidScript = "InvalidScript"
	// CustomizationReasonConflict: an older customization already defines one of the operations for the kind.
	CustomizationReasonConflict = "Conflict"
)

// +kubebuilder:object:root=true

// ResourceInterpreterCustomizationList is a list of ResourceInterpreterCustomizations.
type ResourceInterpreterCustomizationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ResourceInterpreterCustomization `json:"items"`
}
