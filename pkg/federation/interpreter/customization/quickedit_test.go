package customization

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/interpretertest"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// An edit that lands before the status write of the version this federator accepted just before it (the write
// conflicts) is refused, and that accepted version keeps serving, not the older one the status kept nor nothing,
// and is written to the status for every federator.
func TestQuickEditsKeepTheNewestAcceptedVersion(t *testing.T) {
	_, c := fedtest.Host(t)
	ctx := t.Context()
	var beforeWrite func()
	hooked := interpretertest.StatusHooked{Client: c, Before: func() {
		if f := beforeWrite; f != nil {
			beforeWrite = nil
			f()
		}
	}}
	edit := func(t *testing.T, cust *configv1alpha1.ResourceInterpreterCustomization, script string) {
		t.Helper()
		if err := c.Get(ctx, client.ObjectKeyFromObject(cust), cust); err != nil {
			t.Fatal(err)
		}
		cust.Spec.Customizations.HealthInterpretation.LuaScript = script
		if err := c.Update(ctx, cust); err != nil {
			t.Fatal(err)
		}
	}
	// healthy is what the layer answers for a Widget: "healthy", "unhealthy", or that nothing handles it.
	healthy := func(l *Layer) string {
		if !l.Handles(widgetGVK, interpreter.InterpretHealth) {
			return "not handled"
		}
		ok, err := l.InterpretHealth(ctx, widget())
		switch {
		case err != nil:
			return err.Error()
		case ok:
			return "healthy"
		}
		return "unhealthy"
	}
	reconcile := func(t *testing.T, r *Reconciler) {
		t.Helper()
		if _, err := r.Reconcile(ctx, setRequest); err != nil {
			t.Fatal(err)
		}
	}
	kept := func(t *testing.T, cust *configv1alpha1.ResourceInterpreterCustomization) string {
		t.Helper()
		if err := c.Get(ctx, client.ObjectKeyFromObject(cust), cust); err != nil {
			t.Fatal(err)
		}
		if cust.Status.LastAccepted == nil {
			return "none"
		}
		return fmt.Sprintf("generation %d", cust.Status.LastAccepted.Generation)
	}

	t.Run("over an older kept version", func(t *testing.T) {
		cust := ric("quick-older", 0, 0, good2)
		cust.CreationTimestamp = metav1.Time{}
		if err := c.Create(ctx, &cust); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), &cust) })
		r := &Reconciler{Client: hooked, Layer: NewLayer(), Recorder: record.NewFakeRecorder(100)}
		reconcile(t, r) // generation 1 (unhealthy) is accepted and kept
		edit(t, &cust, good)
		// Generation 3 (broken) lands between the pass's read of generation 2 (healthy) and its status write.
		beforeWrite = func() { edit(t, &cust, broken) }
		reconcile(t, r)
		if got := healthy(r.Layer); got != "healthy" {
			t.Fatalf("generation 2 does not serve after its pass: %s", got)
		}
		reconcile(t, r)
		if got := kept(t, &cust); got != "generation 2" {
			t.Errorf("status.lastAccepted %s, want generation 2 kept for every federator", got)
		}
		if got := healthy(r.Layer); got != "healthy" {
			t.Errorf("generation 3 refused, the layer answers %s: generation 1, which the status kept, serves, "+
				"not generation 2, which this federator accepted and served", got)
		}
	})

	t.Run("over none kept", func(t *testing.T) {
		cust := onKind(ric("quick-none", 0, 0, good), "Gadget")
		cust.CreationTimestamp = metav1.Time{}
		if err := c.Create(ctx, &cust); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), &cust) })
		gadget := widgetGVK
		gadget.Kind = "Gadget"
		handles := func(l *Layer) bool { return l.Handles(gadget, interpreter.InterpretHealth) }
		r := &Reconciler{Client: hooked, Layer: NewLayer(), Recorder: record.NewFakeRecorder(100)}
		// Generation 2 (broken) lands between the pass's read of generation 1 and its status write.
		beforeWrite = func() { edit(t, &cust, broken) }
		reconcile(t, r)
		if !handles(r.Layer) {
			t.Fatal("generation 1 does not serve after its pass")
		}
		reconcile(t, r)
		if got := kept(t, &cust); got != "generation 1" {
			t.Errorf("status.lastAccepted %s, want generation 1 kept for every federator", got)
		}
		if !handles(r.Layer) {
			t.Error("generation 2 refused, nothing serves: generation 1, which this federator accepted and served, does not")
		}
	})
}
