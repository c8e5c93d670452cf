package webhook

import (
	"reflect"
	"testing"

	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/rerun"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// fakeHost is a host holding configs, with their status subresource.
func fakeHost(configs ...*configv1alpha1.ResourceInterpreterWebhookConfiguration) client.Client {
	b := fake.NewClientBuilder().WithScheme(fedtest.Scheme()).
		WithStatusSubresource(&configv1alpha1.ResourceInterpreterWebhookConfiguration{})
	for _, c := range configs {
		b = b.WithObjects(c)
	}
	return b.Build()
}

// The set loaded at startup is told to no one; each later pass tells what its new set changed, and a pass that
// changes nothing, or whose new version is refused (the last accepted one keeps serving), tells nothing.
func TestReconcilerTellsWhatEachNewSetChanged(t *testing.T) {
	health := config("health", "https://127.0.0.1:1/x", nil, interpreter.InterpretHealth)
	health.Generation = 1
	cl := fakeHost(&health)
	var told []string
	changes := &rerun.Notifier{}
	changes.Subscribe(func(a interpreter.Affected) { told = append(told, a.String()) })
	r := &Reconciler{Client: cl, Layer: NewLayer(), Recorder: record.NewFakeRecorder(100), Changes: changes}
	ctx := t.Context()
	reconcile := func() {
		t.Helper()
		if _, err := r.Reconcile(ctx, setRequest); err != nil {
			t.Fatal(err)
		}
	}

	if err := r.Load(ctx, cl); err != nil {
		t.Fatal(err)
	}
	reconcile()
	if len(told) != 0 {
		t.Fatalf("after Load and a pass over the same set, told %q; want nothing", told)
	}

	retain := config("retain", "https://127.0.0.1:1/x", nil, interpreter.Retain)
	retain.Generation = 1
	if err := cl.Create(ctx, &retain); err != nil {
		t.Fatal(err)
	}
	reconcile()
	if err := cl.Get(ctx, client.ObjectKeyFromObject(&health), &health); err != nil {
		t.Fatal(err)
	}
	health.Generation = 2 // as the API server bumps it on a change
	health.Webhooks[0].InterpreterContextVersions = []string{"v1beta1"}
	if err := cl.Update(ctx, &health); err != nil {
		t.Fatal(err)
	}
	reconcile()
	if err := cl.Delete(ctx, &retain); err != nil {
		t.Fatal(err)
	}
	reconcile()
	want := []string{"Retain: Widget.example.io", "Retain: Widget.example.io"}
	if !reflect.DeepEqual(told, want) {
		t.Errorf("told %q, want %q", told, want)
	}
}
