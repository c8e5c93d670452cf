package customization

import (
	"context"
	"strings"
	"testing"

	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/interpretertest"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// TestLoadServesBeforeAnyReconcile: a federator starting up with a customization in the host serves it from Load,
// before its manager (and with it the reconciler) runs, so no stage sees the kind without the user's script.
func TestLoadServesBeforeAnyReconcile(t *testing.T) {
	_, c := fedtest.Host(t)
	ctx := t.Context()
	health := ric("widget-health", 0, 0, good)
	health.CreationTimestamp.Reset()
	if err := c.Create(ctx, &health); err != nil {
		t.Fatal(err)
	}

	r := &Reconciler{Client: c, Layer: NewLayer(), Recorder: record.NewFakeRecorder(10)}
	if r.Layer.Handles(widgetGVK, interpreter.InterpretHealth) {
		t.Fatal("a new layer handles Widget before loading")
	}
	if err := r.Load(ctx, c); err != nil {
		t.Fatal(err)
	}
	if ok, err := r.Layer.InterpretHealth(ctx, widget()); err != nil || !ok {
		t.Fatalf("after Load, InterpretHealth = %v, %v; want the customization's true", ok, err)
	}
	// Load writes no status: the reconciler's first pass does, and reports the customization's standing then.
	if err := c.Get(ctx, client.ObjectKeyFromObject(&health), &health); err != nil {
		t.Fatal(err)
	}
	if len(health.Status.Conditions) != 0 {
		t.Fatalf("Load wrote a status: %+v", health.Status)
	}
	if _, err := r.Reconcile(ctx, setRequest); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(&health), &health); err != nil {
		t.Fatal(err)
	}
	if health.Status.ServedGeneration != health.Generation {
		t.Fatalf("after the first Reconcile, servedGeneration = %d, want %d", health.Status.ServedGeneration, health.Generation)
	}
}

func TestLoadFailsWhenTheHostCannotBeRead(t *testing.T) {
	r := &Reconciler{Layer: NewLayer(), Recorder: record.NewFakeRecorder(10)}
	err := r.Load(context.Background(), interpretertest.Unreadable{})
	if err == nil || !strings.Contains(err.Error(), "loading resource interpreter customizations: connection refused") {
		t.Fatalf("err = %v, want one saying the customizations could not be loaded", err)
	}
}
