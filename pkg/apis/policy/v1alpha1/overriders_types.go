package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Overriders are the changes of one override rule. They are applied in this order: image, command, args, labels,
// annotations, field, plaintext.
// +kubebuilder:validation:XValidation:rule="has(self.plaintext) || has(self.imageOverrider) || has(self.commandOverrider) || has(self.argsOverrider) || has(self.labelsOverrider) || has(self.annotationsOverrider) || has(self.fieldOverrider)",message="overriders must set at least one overrider"
type Overriders struct {
	// Plaintext patches fields by JSON pointer, like a JSON patch.
	// +kubebuilder:validation:MaxItems=128
	// +listType=atomic
	// +optional
	Plaintext []PlaintextOverrider `json:"plaintext,omitempty"`

	// ImageOverrider changes parts of container images.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	ImageOverrider []ImageOverrider `json:"imageOverrider,omitempty"`

	// CommandOverrider adds to or removes from a container's command.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	CommandOverrider []CommandArgsOverrider `json:"commandOverrider,omitempty"`

	// ArgsOverrider adds to or removes from a container's args.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	ArgsOverrider []CommandArgsOverrider `json:"argsOverrider,omitempty"`

	// LabelsOverrider changes the resource's labels.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	LabelsOverrider []LabelAnnotationOverrider `json:"labelsOverrider,omitempty"`

	// AnnotationsOverrider changes the resource's annotations.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	AnnotationsOverrider []LabelAnnotationOverrider `json:"annotationsOverrider,omitempty"`

	// FieldOverrider patches a document held in a string field, such as a JSON or YAML file in a ConfigMap.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	FieldOverrider []FieldOverrider `json:"fieldOverrider,omitempty"`
}

// OverriderOperator is an overrider's operation.
type OverriderOperator string

// The overrider operations.
const (
	OverriderOpAdd     OverriderOperator = "add"
	OverriderOpRemove  OverriderOperator = "remove"
	OverriderOpReplace OverriderOperator = "replace"
)

// PlaintextOverrider is one JSON-patch operation on the resource. (That value is set for add and replace and unset
// for remove is checked when the policy is applied: CEL cannot see a field of any JSON type.)
type PlaintextOverrider struct {
	// Path is a JSON pointer (RFC 6901) to the field, e.g. "/spec/replicas". An array index may be negative,
	// counted from the end as in Karmada: "-1" is the last element, and for add "-1" appends.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^(/([^/~]|~[01])*)+$`
	// +required
	Path string `json:"path"`

	// Operator is add, remove or replace, as in JSON patch.
	// +kubebuilder:validation:Enum=add;remove;replace
	// +required
	Operator OverriderOperator `json:"operator"`

	// Value is the new value for add and replace; it must be unset for remove.
	// +optional
	Value *apiextensionsv1.JSON `json:"value,omitempty"`
}

// ImageComponent is a part of an image reference [registry/]repository[:tag|@digest].
// +kubebuilder:validation:Enum=Registry;Repository;Tag
type ImageComponent string

// The image components.
const (
	// Registry is the host (and port) part, e.g. "registry.k8s.io" or "registry.example:10443".
	Registry ImageComponent = "Registry"
	// Repository is the path part, e.g. "library/nginx".
	Repository ImageComponent = "Repository"
	// Tag is the tag or digest, e.g. "1.27", or "sha256:<hex>" (also "@sha256:<hex>"; sha384 and sha512 too, each
	// with its full hex) for a digest.
	Tag ImageComponent = "Tag"
)

// ImageOverrider changes one part of container images.
// +kubebuilder:validation:XValidation:rule="self.operator == 'remove' || (has(self.value) && size(self.value) > 0)",message="value is required when operator is add or replace"
type ImageOverrider struct {
	// Predicate picks the image field to change. Unset means every container image of a Pod, or of the pod template
	// of a ReplicaSet, Deployment, StatefulSet, DaemonSet or Job of any API group (found by kind, as in Karmada, so
	// OpenKruise's Advanced StatefulSet and DaemonSet too), or of a batch CronJob's job template.
	// +optional
	Predicate *ImagePredicate `json:"predicate,omitempty"`

	// Component is the part of the image to change.
	// +required
	Component ImageComponent `json:"component"`

	// Operator is add, remove or replace. As in Karmada, add appends the value to the registry, the repository or
	// the tag (registry "reg.example" with add ".cn" becomes "reg.example.cn", tag "1.27" with add "-alpine"
	// becomes "1.27-alpine", dropping a digest beside it; an image without a tag gets the value as its tag);
	// replace sets the part; remove drops it (not the repository). A tag that ends up neither a tag nor a digest
	// ("sha256:<hex>") is an error; so is a digest added to an image's tag.
	// +kubebuilder:validation:Enum=add;remove;replace
	// +required
	Operator OverriderOperator `json:"operator"`

	// Value is the new part, for add and replace; ignored for remove.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Value string `json:"value,omitempty"`
}

// ImagePredicate picks an image field.
type ImagePredicate struct {
	// Path is a JSON pointer to the image field, e.g. "/spec/template/spec/containers/0/image".
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^(/([^/~]|~[01])*)+$`
	// +required
	Path string `json:"path"`
}

// CommandArgsOverrider changes a container's command or args.
type CommandArgsOverrider struct {
	// ContainerName is the container to change.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	ContainerName string `json:"containerName"`

	// Operator: add appends the values; remove deletes the entries equal to them.
	// +kubebuilder:validation:Enum=add;remove
	// +required
	Operator OverriderOperator `json:"operator"`

	// Value are the entries to add or remove.
	// +kubebuilder:validation:MaxItems=128
	// +listType=atomic
	// +optional
	Value []string `json:"value,omitempty"`
}

// LabelAnnotationOverrider changes labels or annotations.
type LabelAnnotationOverrider struct {
	// Operator: add sets the keys (present or not, as a JSON-patch add), replace changes keys that are present,
	// remove deletes the keys.
	// +kubebuilder:validation:Enum=add;remove;replace
	// +required
	Operator OverriderOperator `json:"operator"`

	// Value are the keys and values (for remove, only the keys count).
	// +optional
	Value map[string]string `json:"value,omitempty"`
}

// FieldOverrider patches a JSON or YAML document held in one string field; a single overrider patches one format.
// +kubebuilder:validation:XValidation:rule="has(self.json) != has(self.yaml)",message="fieldOverrider must set exactly one of json or yaml"
type FieldOverrider struct {
	// FieldPath is a JSON pointer to the string field, e.g. "/data/config.yaml".
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^(/([^/~]|~[01])*)+$`
	// +required
	FieldPath string `json:"fieldPath"`

	// JSON patches the field's content as a JSON document.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	JSON []PatchOperation `json:"json,omitempty"`

	// YAML patches the field's content as a YAML document.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	YAML []PatchOperation `json:"yaml,omitempty"`
}

// PatchOperation is one JSON-patch operation inside a document held in a field.
type PatchOperation struct {
	// SubPath is a JSON pointer into the document, e.g. "/database/port". An array index may be negative, counted
	// from the end ("-1" is the last element; for add it appends).
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^(/([^/~]|~[01])*)+$`
	// +required
	SubPath string `json:"subPath"`

	// Operator is add, remove or replace.
	// +kubebuilder:validation:Enum=add;remove;replace
	// +required
	Operator OverriderOperator `json:"operator"`

	// Value is the new value for add and replace; ignored for remove.
	// +optional
	Value *apiextensionsv1.JSON `json:"value,omitempty"`
}
