package v1alpha1

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=riwc,categories=fedmesh
// +kubebuilder:printcolumn:name="Webhooks",type=string,JSONPath=`.webhooks[*].name`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

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
}

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
