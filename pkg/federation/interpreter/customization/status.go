package customization

import (
	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/acceptance"
)

// statusKind is how the reconciler writes customizations' statuses and tells of them.
var statusKind = acceptance.Kind[*configv1alpha1.AcceptedVersion, *configv1alpha1.ResourceInterpreterCustomization]{
	Noun:    "customization",
	Key:     "customization",
	Long:    "resource interpreter customization",
	Serving: ReasonServing,
	Refused: ReasonRefused,
	Status: func(c *configv1alpha1.ResourceInterpreterCustomization) acceptance.Fields[*configv1alpha1.AcceptedVersion] {
		s := &c.Status
		return acceptance.Fields[*configv1alpha1.AcceptedVersion]{ObservedGeneration: &s.ObservedGeneration,
			ServedGeneration: &s.ServedGeneration, LastAccepted: &s.LastAccepted, Conditions: &s.Conditions}
	},
}
