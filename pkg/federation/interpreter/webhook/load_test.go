package webhook

import (
	"context"
	"strings"
	"testing"

	"k8s.io/client-go/tools/record"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/interpretertest"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// TestLoadServesBeforeAnyReconcile: a federator starting up with a webhook configuration in the host asks its
// webhook from Load, before its manager (and with it the reconciler) runs; a configuration it cannot call is
// refused as Reconcile refuses it, without failing the load, and left for the first Reconcile to report.
func TestLoadServesBeforeAnyReconcile(t *testing.T) {
	_, c := fedtest.Host(t)
	ctx := t.Context()
	widgets := config("widgets", "https://127.0.0.1:1/interpret", nil, interpreter.InterpretHealth)
	broken := config("broken", "https://127.0.0.1:1/interpret", []byte("not a certificate"), interpreter.Retain)
	for _, cfg := range []*configv1alpha1.ResourceInterpreterWebhookConfiguration{&widgets, &broken} {
		if err := c.Create(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}

	events := record.NewFakeRecorder(10)
	r := &Reconciler{Client: c, Layer: NewLayer(), Recorder: events}
	if r.Layer.Handles(widgetGVK, interpreter.InterpretHealth) {
		t.Fatal("a new layer handles Widget before loading")
	}
	if err := r.Load(ctx, c); err != nil {
		t.Fatal(err)
	}
	if !r.Layer.Handles(widgetGVK, interpreter.InterpretHealth) {
		t.Fatal("after Load, the webhook of widgets does not handle InterpretHealth of Widget")
	}
	if r.Layer.Handles(widgetGVK, interpreter.Retain) {
		t.Fatal("after Load, the refused configuration serves")
	}
	if len(events.Events) != 0 {
		t.Fatalf("Load reported %q; the first Reconcile reports", <-events.Events)
	}
	if _, err := r.Reconcile(ctx, setRequest); err != nil {
		t.Fatal(err)
	}
	if e := <-events.Events; !strings.Contains(e, ReasonRefused) || !strings.Contains(e, "caBundle holds no PEM certificate") {
		t.Fatalf("first event %q, want the refusal of broken", e)
	}
}

func TestLoadFailsWhenTheHostCannotBeRead(t *testing.T) {
	r := &Reconciler{Layer: NewLayer(), Recorder: record.NewFakeRecorder(10)}
	err := r.Load(context.Background(), interpretertest.Unreadable{})
	if err == nil || !strings.Contains(err.Error(), "loading resource interpreter webhook configurations: connection refused") {
		t.Fatalf("err = %v, want one saying the configurations could not be loaded", err)
	}
}
