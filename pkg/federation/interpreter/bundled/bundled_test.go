package bundled

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/interpretertest"
)

func TestFixtures(t *testing.T) {
	fixtures, err := interpretertest.Load("testdata")
	if err != nil {
		t.Fatal(err)
	}
	if len(fixtures) == 0 {
		t.Fatal("no fixtures")
	}
	interpretertest.Run(t, New(), fixtures)
}

// TestEveryBundledScriptHasAFixture keeps the fixtures in step with the customizations: each operation a bundled
// customization defines is exercised by at least one fixture.
func TestEveryBundledScriptHasAFixture(t *testing.T) {
	fixtures, err := interpretertest.Load("testdata")
	if err != nil {
		t.Fatal(err)
	}
	covered := map[schema.GroupVersionKind]map[interpreter.Operation]bool{}
	for _, fx := range fixtures {
		obj := fx.DesiredObj
		if obj == nil {
			obj = fx.ObservedObj
		}
		gvk := obj.GroupVersionKind()
		if covered[gvk] == nil {
			covered[gvk] = map[interpreter.Operation]bool{}
		}
		covered[gvk][fx.Operation] = true
	}
	in := New()
	cs, err := Customizations()
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 3 {
		t.Fatalf("%d bundled customizations, want 3", len(cs))
	}
	for _, c := range cs {
		gvk := schema.FromAPIVersionAndKind(c.Spec.Target.APIVersion, c.Spec.Target.Kind)
		for _, op := range interpreter.Operations {
			if in.Handles(gvk, op) && !covered[gvk][op] {
				t.Errorf("%s %s has no fixture", gvk.Kind, op)
			}
		}
	}
}
