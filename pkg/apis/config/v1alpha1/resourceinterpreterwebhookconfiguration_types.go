package v1alpha1

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=riwc,categories=fedmesh
// +kubebuilder:printcolumn:name="Webhooks",type=string,JSONPath=`.webhooks[*].name`
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].reason`
// +kubebuilder:printcolumn:name="Serving",type=integer,JSONPath=`.status.servedGeneration`,description="The generation whose webhooks serve; empty when none does."
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Accepted")].message`
// +kubebuilder:subresource:status

// ResourceInterpreterWebhookConfiguration registers webhooks that interpret kinds for the federation, for logic
// that is too big for a Lua script. Lua customizations take precedence over webhooks; webhooks over the built-in
// rules.
type ResourceInterpreterWebhookConfiguration struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Webhooks are the webhooks and what each interprets.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	// +required
	Webhooks []ResourceInterpreterWebhook `json:"webhooks"`

	// Status says whether the webhooks serve, and keeps their last accepted version. Karmada's type has none; the
	// webhooks stay at the top level, as there.
	// +optional
	Status ResourceInterpreterWebhookConfigurationStatus `json:"status,omitempty"`
}

// ResourceInterpreterWebhookConfigurationStatus is written by the federation: whether the current webhooks are
// accepted, which generation serves, and the last accepted version of the webhooks.
type ResourceInterpreterWebhookConfigurationStatus struct {
	// ObservedGeneration is the generation of the webhooks that the conditions speak of.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// ServedGeneration is the generation whose webhooks serve: the current one's while it is accepted,
	// LastAccepted's while it is refused; zero when none serves.
	// +optional
	ServedGeneration int64 `json:"servedGeneration,omitempty"`

	// LastAccepted is the last version of the webhooks that was accepted. While a later version is refused it
	// serves in its place, in every federator: a restarted one, and each shard.
	// +optional
	LastAccepted *AcceptedWebhooks `json:"lastAccepted,omitempty"`

	// Conditions: Accepted says whether the current webhooks serve, and if not why.
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}

// AcceptedWebhooks is a copy of accepted webhooks.
type AcceptedWebhooks struct {
	// Generation of the configuration when they were accepted.
	// +required
	Generation int64 `json:"generation"`

	// Webhooks as they were then.
	// +listType=atomic
	// +required
	Webhooks []ResourceInterpreterWebhook `json:"webhooks"`
}

// The Accepted condition of a ResourceInterpreterWebhookConfiguration, and its reasons.
const (
	// WebhookConfigurationConditionAccepted is True when the current webhooks serve.
	WebhookConfigurationConditionAccepted = "Accepted"
	// WebhookConfigurationReasonAccepted: every webhook can be called.
	WebhookConfigurationReasonAccepted = "Accepted"
	// WebhookConfigurationReasonInvalidWebhook: a webhook cannot be called: no usable URL or service, a CA bundle
	// without a certificate, or no ResourceInterpreterContext version in common.
	WebhookConfigurationReasonInvalidWebhook = "InvalidWebhook"
)

// ResourceInterpreterWebhook is one webhook and the operations and kinds it interprets.
type ResourceInterpreterWebhook struct {
	// Name identifies the webhook: a DNS subdomain, e.g. "workloads.interpreter.example.com".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +required
	Name string `json:"name"`

	// ClientConfig says how to reach the webhook: exactly one of url or service, and the CA bundle that signs its
	// serving certificate, as for admission webhooks.
	// +kubebuilder:validation:XValidation:rule="has(self.url) != has(self.service)",message="clientConfig must set exactly one of url or service"
	// +required
	ClientConfig admissionregistrationv1.WebhookClientConfig `json:"clientConfig"`

	// Rules select the operations and kinds the webhook is called for; a call matches if any rule matches.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Rules []RuleWithOperations `json:"rules,omitempty"`

	// TimeoutSeconds bounds a call, from 1 to 30 seconds.
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=30
	// +optional
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`

	// InterpreterContextVersions are the ResourceInterpreterContext versions the webhook accepts, preferred first.
	// The federation uses the first one it speaks.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	// +required
	InterpreterContextVersions []string `json:"interpreterContextVersions"`
}

// RuleWithOperations selects operations on kinds.
// +kubebuilder:validation:XValidation:rule="!self.operations.exists(o, o == '*') || size(self.operations) == 1",message="'*' must be the only operation when present"
type RuleWithOperations struct {
	// Operations the webhook answers; "*" means all.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +required
	Operations []InterpreterOperation `json:"operations"`

	Rule `json:",inline"`
}

// InterpreterOperation is a question the federation asks about an object.
// +kubebuilder:validation:Enum="*";InterpretReplica;ReviseReplica;InterpretStatus;Prune;Retain;AggregateStatus;InterpretHealth;InterpretDependency;InterpretComponent
type InterpreterOperation string

// The interpreter operations.
const (
	InterpreterOperationAll                 InterpreterOperation = "*"
	InterpreterOperationInterpretReplica    InterpreterOperation = "InterpretReplica"
	InterpreterOperationReviseReplica       InterpreterOperation = "ReviseReplica"
	InterpreterOperationInterpretStatus     InterpreterOperation = "InterpretStatus"
	InterpreterOperationPrune               InterpreterOperation = "Prune"
	InterpreterOperationRetain              InterpreterOperation = "Retain"
	InterpreterOperationAggregateStatus     InterpreterOperation = "AggregateStatus"
	InterpreterOperationInterpretHealth     InterpreterOperation = "InterpretHealth"
	InterpreterOperationInterpretDependency InterpreterOperation = "InterpretDependency"
	InterpreterOperationInterpretComponent  InterpreterOperation = "InterpretComponent"
)

// Rule selects kinds by API group, version and kind; "*" alone matches all. Use "" for the core group.
type Rule struct {
	// APIGroups, e.g. ["apps", "apps.kruise.io"].
	// +kubebuilder:validation:MinItems=1
	// +listType=atomic
	// +required
	APIGroups []string `json:"apiGroups"`

	// APIVersions, e.g. ["v1", "v1alpha1"].
	// +kubebuilder:validation:MinItems=1
	// +listType=atomic
	// +required
	APIVersions []string `json:"apiVersions"`

	// Kinds, e.g. ["CloneSet"].
	// +kubebuilder:validation:MinItems=1
	// +listType=atomic
	// +required
	Kinds []string `json:"kinds"`
}

// +kubebuilder:object:root=true

// ResourceInterpreterWebhookConfigurationList is a list of ResourceInterpreterWebhookConfigurations.
type ResourceInterpreterWebhookConfigurationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ResourceInterpreterWebhookConfiguration `json:"items"`
}
