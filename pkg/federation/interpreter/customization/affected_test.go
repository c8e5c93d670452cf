package customization

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
)

const aggregate = "function AggregateStatus(o, items) return o end"

// withAggregation is c with a status aggregation script too.
func withAggregation(c configv1alpha1.ResourceInterpreterCustomization, script string) configv1alpha1.ResourceInterpreterCustomization {
	c.Spec.Customizations.StatusAggregation = &configv1alpha1.StatusAggregation{LuaScript: script}
	return c
}

func inVersion(c configv1alpha1.ResourceInterpreterCustomization, apiVersion string) configv1alpha1.ResourceInterpreterCustomization {
	c.Spec.Target.APIVersion = apiVersion
	return c
}

func TestChangedNamesTheScriptsThatCameWentOrChanged(t *testing.T) {
	widget := schema.GroupKind{Group: "example.io", Kind: "Widget"}
	gadget := schema.GroupKind{Group: "example.io", Kind: "Gadget"}
	set := func(cs ...configv1alpha1.ResourceInterpreterCustomization) []configv1alpha1.ResourceInterpreterCustomization {
		return cs
	}
	type hit struct {
		gk schema.GroupKind
		op interpreter.Operation
	}
	for _, tc := range []struct {
		name       string
		prev, next []configv1alpha1.ResourceInterpreterCustomization
		want       []hit
	}{
		{"nothing to nothing", nil, nil, nil},
		{"the same set", set(ric("a", 1, 0, good)), set(ric("a", 2, 0, good)), nil},
		{"renamed with the same scripts", set(ric("a", 1, 0, good)), set(ric("b", 1, 0, good)), nil},
		{"created", nil, set(withAggregation(ric("a", 1, 0, good), aggregate)),
			[]hit{{widget, interpreter.InterpretHealth}, {widget, interpreter.AggregateStatus}}},
		{"deleted", set(ric("a", 1, 0, good), onKind(ric("b", 1, 0, good), "Gadget")), set(ric("a", 1, 0, good)),
			[]hit{{gadget, interpreter.InterpretHealth}}},
		{"one script edited", set(withAggregation(ric("a", 1, 0, good), aggregate)), set(withAggregation(ric("a", 2, 0, good2), aggregate)),
			[]hit{{widget, interpreter.InterpretHealth}}},
		{"a script added beside", set(ric("a", 1, 0, good)), set(withAggregation(ric("a", 2, 0, good), aggregate)),
			[]hit{{widget, interpreter.AggregateStatus}}},
		{"moved to another version of its kind", set(ric("a", 1, 0, good)), set(inVersion(ric("a", 2, 0, good), "example.io/v2")),
			[]hit{{widget, interpreter.InterpretHealth}}},
		{"moved to another kind", set(ric("a", 1, 0, good)), set(onKind(ric("a", 2, 0, good), "Gadget")),
			[]hit{{widget, interpreter.InterpretHealth}, {gadget, interpreter.InterpretHealth}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Changed(tc.prev, tc.next)
			if got.Empty() != (len(tc.want) == 0) {
				t.Fatalf("Changed = %s, want %v", got, tc.want)
			}
			wanted := map[hit]bool{}
			for _, h := range tc.want {
				wanted[h] = true
			}
			for _, gk := range []schema.GroupKind{widget, gadget} {
				for _, op := range interpreter.Operations {
					if m := got.Matches(gk, op); m != wanted[hit{gk, op}] {
						t.Errorf("Changed = %s: matches %s of %s %v, want %v", got, op, gk, m, !m)
					}
				}
			}
		})
	}
}
