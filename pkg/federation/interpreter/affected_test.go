package interpreter_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
)

func TestAffectedMatchesTheKindsOfItsOperations(t *testing.T) {
	deployment := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	widget := schema.GroupKind{Group: "example.io", Kind: "Widget"}
	var some, every interpreter.Affected
	some.Add(interpreter.AggregateStatus, deployment)
	every.AddEvery(interpreter.Retain)
	every.Add(interpreter.InterpretHealth, widget)

	for _, tc := range []struct {
		name string
		a    interpreter.Affected
		gk   schema.GroupKind
		ops  []interpreter.Operation
		want bool
	}{
		{"the kind and operation added", some, deployment, []interpreter.Operation{interpreter.AggregateStatus}, true},
		{"one of several operations", some, deployment, []interpreter.Operation{interpreter.InterpretStatus, interpreter.AggregateStatus}, true},
		{"another operation of the kind", some, deployment, []interpreter.Operation{interpreter.Retain}, false},
		{"another kind", some, widget, []interpreter.Operation{interpreter.AggregateStatus}, false},
		{"another group, same kind name", some, schema.GroupKind{Group: "example.io", Kind: "Deployment"}, []interpreter.Operation{interpreter.AggregateStatus}, false},
		{"no operations", some, deployment, nil, false},
		{"every kind", every, deployment, []interpreter.Operation{interpreter.Retain}, true},
		{"every kind of one operation only", every, deployment, []interpreter.Operation{interpreter.InterpretHealth}, false},
		{"a kind beside every kind of another operation", every, widget, []interpreter.Operation{interpreter.InterpretHealth}, true},
		{"nothing", interpreter.Affected{}, deployment, interpreter.Operations, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.a.Matches(tc.gk, tc.ops...); got != tc.want {
				t.Errorf("Matches(%s, %v) = %v, want %v (affected: %s)", tc.gk, tc.ops, got, tc.want, tc.a)
			}
		})
	}
}

func TestAffectedSaysWhatItHolds(t *testing.T) {
	var a interpreter.Affected
	if !a.Empty() || a.String() != "nothing" {
		t.Fatalf("zero value: Empty %v, %q", a.Empty(), a.String())
	}
	a.Add(interpreter.AggregateStatus, schema.GroupKind{Group: "apps", Kind: "StatefulSet"})
	a.Add(interpreter.AggregateStatus, schema.GroupKind{Group: "apps", Kind: "Deployment"})
	a.AddEvery(interpreter.Retain)
	if a.Empty() {
		t.Fatal("Empty after Add")
	}
	if got, want := a.String(), "Retain: every kind; AggregateStatus: Deployment.apps, StatefulSet.apps"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
