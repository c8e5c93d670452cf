package webhook

import (
	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/acceptance"
)

// statusKind is how the reconciler writes configurations' statuses and tells of them.
var statusKind = acceptance.Kind[*configv1alpha1.AcceptedWebhooks, *configv1alpha1.ResourceInterpreterWebhookConfiguration]{
	Noun:    "webhook configuration",
	Key:     "configuration",
	Long:    "resource interpreter webhook configuration",
	Serving: ReasonServing,
	Refused: ReasonRefused,
	Status: func(c *configv1alpha1.ResourceInterpreterWebhookConfiguration) acceptance.Fields[*configv1alpha1.AcceptedWebhooks] {
		s := &c.Status
		return acceptance.Fields[*configv1alpha1.AcceptedWebhooks]{ObservedGeneration: &s.ObservedGeneration,
			ServedGeneration: &s.ServedGeneration, LastAccepted: &s.LastAccepted, Conditions: &s.Conditions}
	},
}
