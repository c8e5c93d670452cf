package customization

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// TestReconcilerReportsEachChange: an Event says what changed in a customization's standing, once, even when its
// generation did not change (it is displaced by an older customization's edit, or takes its operation back).
func TestReconcilerReportsEachChange(t *testing.T) {
	ctx := context.Background()
	a := onKind(ric("a", 1, 1, good), "Gadget")
	b := ric("b", 1, 2, good)
	c := fake.NewClientBuilder().WithScheme(fedtest.Scheme()).WithObjects(&a, &b).
		WithStatusSubresource(&configv1alpha1.ResourceInterpreterCustomization{}).Build()
	events := &fedtest.Events{}
	r := &Reconciler{Client: c, Layer: NewLayer(), Recorder: events}

	// editA sets a's kind, as an edit that bumps its generation.
	editA := func(kind string) func() error {
		return func() error {
			var cur configv1alpha1.ResourceInterpreterCustomization
			if err := c.Get(ctx, client.ObjectKey{Name: "a"}, &cur); err != nil {
				return err
			}
			cur.Spec.Target.Kind = kind
			cur.Generation++
			return c.Update(ctx, &cur)
		}
	}
	steps := []struct {
		name   string
		change func() error
		want   []string
	}{
		{"both serve", nil, []string{"a " + ReasonServing, "b " + ReasonServing}},
		{"nothing changed", nil, nil},
		{"older a claims Widget: b is displaced", editA("Widget"), []string{"b " + ReasonRefused, "a " + ReasonServing}},
		{"still displaced", nil, nil},
		{"a gives Widget back: b serves again", editA("Gadget"), []string{"a " + ReasonServing, "b " + ReasonServing}},
		{"deleted and created again: reported afresh", func() error {
			if err := c.Delete(ctx, &b); err != nil {
				return err
			}
			if _, err := r.Reconcile(ctx, reconcile.Request{}); err != nil {
				return err
			}
			b.ResourceVersion = ""
			return c.Create(ctx, &b)
		}, []string{"b " + ReasonServing}},
	}
	for _, s := range steps {
		if s.change != nil {
			if err := s.change(); err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
		}
		before := len(events.All())
		if _, err := r.Reconcile(ctx, reconcile.Request{}); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		// "name: type reason message" becomes "name reason": which customization, and what it was told.
		var got []string
		for _, e := range events.All()[before:] {
			name, rest, _ := strings.Cut(e, ": ")
			got = append(got, name+" "+strings.Fields(rest)[1])
		}
		if !reflect.DeepEqual(got, s.want) {
			t.Errorf("%s: Events %q, want %q", s.name, got, s.want)
		}
	}
}
