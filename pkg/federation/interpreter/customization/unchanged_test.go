package customization

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// TestUnchangedServedSetKeepsTheLayer: a reconcile after a change that leaves what serves as it was (nothing, another
// shard's or version's status write, a spec edit back to the same scripts) keeps the compiled layer; a change of a
// script builds a new one.
func TestUnchangedServedSetKeepsTheLayer(t *testing.T) {
	ctx := context.Background()
	a := ric("a", 1, 0, good)
	b := onKind(ric("b", 1, 1, broken), "Gadget") // refused, and nothing kept: serves nothing
	cl := fake.NewClientBuilder().WithScheme(fedtest.Scheme()).WithObjects(&a, &b).
		WithStatusSubresource(&configv1alpha1.ResourceInterpreterCustomization{}).Build()
	r := &Reconciler{Client: cl, Layer: NewLayer(), Recorder: record.NewFakeRecorder(100)}

	// edit changes the named customization as its status or its spec.
	edit := func(name string, status bool, change func(*configv1alpha1.ResourceInterpreterCustomization)) func() error {
		return func() error {
			var cur configv1alpha1.ResourceInterpreterCustomization
			if err := cl.Get(ctx, client.ObjectKey{Name: name}, &cur); err != nil {
				return err
			}
			change(&cur)
			if status {
				return cl.Status().Update(ctx, &cur)
			}
			cur.Generation++ // as the API server bumps it on a spec change
			return cl.Update(ctx, &cur)
		}
	}
	reword := func(msg string) func(*configv1alpha1.ResourceInterpreterCustomization) {
		return func(c *configv1alpha1.ResourceInterpreterCustomization) {
			meta.FindStatusCondition(c.Status.Conditions, configv1alpha1.CustomizationConditionAccepted).Message = msg
		}
	}
	script := func(s string) func(*configv1alpha1.ResourceInterpreterCustomization) {
		return func(c *configv1alpha1.ResourceInterpreterCustomization) {
			c.Spec.Customizations.HealthInterpretation.LuaScript = s
		}
	}
	steps := []struct {
		name    string
		change  func() error
		rebuilt bool
	}{
		{"nothing changed", nil, false},
		{"another version words a's status otherwise", edit("a", true, reword("health of Widget (fedmesh 0.9)")), false},
		{"another shard rewrites b's status", edit("b", true, reword("refused by another shard")), false},
		{"a's script edited and put back", edit("a", false, script(good)), false},
		{"b becomes valid", edit("b", false, script(good)), true},
		{"a's script changes", edit("a", false, script(good2)), true},
	}
	if _, err := r.Reconcile(ctx, setRequest); err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		before := r.Layer.Current()
		if s.change != nil {
			if err := s.change(); err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
		}
		if _, err := r.Reconcile(ctx, setRequest); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if rebuilt := r.Layer.Current() != before; rebuilt != s.rebuilt {
			t.Errorf("%s: layer rebuilt %t, want %t", s.name, rebuilt, s.rebuilt)
		}
	}
}
