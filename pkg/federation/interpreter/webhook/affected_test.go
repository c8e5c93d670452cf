package webhook

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
)

// withRule is c with its webhook's rule selecting ops on groups and kinds.
func withRule(c configv1alpha1.ResourceInterpreterWebhookConfiguration, groups, kinds []string, ops ...configv1alpha1.InterpreterOperation) configv1alpha1.ResourceInterpreterWebhookConfiguration {
	c = *c.DeepCopy()
	c.Webhooks[0].Rules = []configv1alpha1.RuleWithOperations{{Operations: ops,
		Rule: configv1alpha1.Rule{APIGroups: groups, APIVersions: []string{"*"}, Kinds: kinds}}}
	return c
}

func TestChangedNamesWhatTheRulesOfChangedWebhooksSelect(t *testing.T) {
	const url = "https://127.0.0.1:1/x"
	widget := schema.GroupKind{Group: "example.io", Kind: "Widget"}
	gadget := schema.GroupKind{Group: "example.io", Kind: "Gadget"}
	deployment := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	health := config("health", url, nil, interpreter.InterpretHealth)
	retain := config("retain", url, nil, interpreter.Retain)
	slower := *health.DeepCopy()
	slower.Webhooks[0].TimeoutSeconds = ptr.To[int32](5)
	moved := *health.DeepCopy()
	moved.Webhooks[0].ClientConfig.URL = ptr.To("https://127.0.0.1:2/y")
	build := func(t *testing.T, cs ...configv1alpha1.ResourceInterpreterWebhookConfiguration) *Interpreter {
		t.Helper()
		in, err := New(cs)
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	type hit struct {
		gk schema.GroupKind
		op interpreter.Operation
	}
	for _, tc := range []struct {
		name       string
		prev, next []configv1alpha1.ResourceInterpreterWebhookConfiguration
		want       []hit
	}{
		{"nothing to nothing", nil, nil, nil},
		{"the same webhooks", []configv1alpha1.ResourceInterpreterWebhookConfiguration{health, retain},
			[]configv1alpha1.ResourceInterpreterWebhookConfiguration{retain, health}, nil},
		{"one added", []configv1alpha1.ResourceInterpreterWebhookConfiguration{health},
			[]configv1alpha1.ResourceInterpreterWebhookConfiguration{health, retain}, []hit{{widget, interpreter.Retain}}},
		{"one removed", []configv1alpha1.ResourceInterpreterWebhookConfiguration{health, retain},
			[]configv1alpha1.ResourceInterpreterWebhookConfiguration{retain}, []hit{{widget, interpreter.InterpretHealth}}},
		{"its timeout changed", []configv1alpha1.ResourceInterpreterWebhookConfiguration{health},
			[]configv1alpha1.ResourceInterpreterWebhookConfiguration{slower}, []hit{{widget, interpreter.InterpretHealth}}},
		{"its URL changed", []configv1alpha1.ResourceInterpreterWebhookConfiguration{health},
			[]configv1alpha1.ResourceInterpreterWebhookConfiguration{moved}, []hit{{widget, interpreter.InterpretHealth}}},
		{"its rules moved to another kind: both", []configv1alpha1.ResourceInterpreterWebhookConfiguration{health},
			[]configv1alpha1.ResourceInterpreterWebhookConfiguration{withRule(health, []string{"example.io"}, []string{"Gadget"}, interpreter.AggregateStatus)},
			[]hit{{widget, interpreter.InterpretHealth}, {gadget, interpreter.AggregateStatus}}},
		{"every operation", nil,
			[]configv1alpha1.ResourceInterpreterWebhookConfiguration{withRule(health, []string{"apps"}, []string{"Deployment"}, configv1alpha1.InterpreterOperationAll)},
			func() []hit {
				var all []hit
				for _, op := range interpreter.Operations {
					all = append(all, hit{deployment, op})
				}
				return all
			}()},
		{"a wildcard kind: every kind", nil,
			[]configv1alpha1.ResourceInterpreterWebhookConfiguration{withRule(health, []string{"example.io"}, []string{"*"}, interpreter.Retain)},
			[]hit{{widget, interpreter.Retain}, {gadget, interpreter.Retain}, {deployment, interpreter.Retain}}},
		{"a wildcard group: every kind", []configv1alpha1.ResourceInterpreterWebhookConfiguration{withRule(health, []string{"*"}, []string{"Widget"}, interpreter.Retain)},
			nil, []hit{{widget, interpreter.Retain}, {gadget, interpreter.Retain}, {deployment, interpreter.Retain}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Changed(build(t, tc.prev...), build(t, tc.next...))
			if got.Empty() != (len(tc.want) == 0) {
				t.Fatalf("Changed = %s, want %v", got, tc.want)
			}
			wanted := map[hit]bool{}
			for _, h := range tc.want {
				wanted[h] = true
			}
			for _, gk := range []schema.GroupKind{widget, gadget, deployment} {
				for _, op := range interpreter.Operations {
					if m := got.Matches(gk, op); m != wanted[hit{gk, op}] {
						t.Errorf("Changed = %s: matches %s of %s %v, want %v", got, op, gk, m, !m)
					}
				}
			}
		})
	}
}
