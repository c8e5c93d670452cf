package customization

import (
	"reflect"
	"testing"

	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/rerun"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// The set loaded at startup is told to no one (the stages have not started, and will look at every object when
// they do); each later pass tells what its new set changed, and a pass that changes nothing tells nothing.
func TestReconcilerTellsWhatEachNewSetChanged(t *testing.T) {
	_, c := fedtest.Host(t)
	ctx := t.Context()
	health := ric("widget-health", 0, 0, good)
	health.CreationTimestamp.Reset()
	if err := c.Create(ctx, &health); err != nil {
		t.Fatal(err)
	}
	var told []string
	changes := &rerun.Notifier{}
	changes.Subscribe(func(a interpreter.Affected) { told = append(told, a.String()) })
	r := &Reconciler{Client: c, Layer: NewLayer(), Recorder: record.NewFakeRecorder(100), Changes: changes}
	reconcile := func() {
		t.Helper()
		if _, err := r.Reconcile(ctx, setRequest); err != nil {
			t.Fatal(err)
		}
	}

	if err := r.Load(ctx, c); err != nil {
		t.Fatal(err)
	}
	reconcile()
	if len(told) != 0 {
		t.Fatalf("after Load and a pass over the same set, told %q; want nothing", told)
	}

	if err := c.Get(ctx, client.ObjectKeyFromObject(&health), &health); err != nil {
		t.Fatal(err)
	}
	health.Spec.Customizations.StatusAggregation = &configv1alpha1.StatusAggregation{LuaScript: aggregate}
	if err := c.Update(ctx, &health); err != nil {
		t.Fatal(err)
	}
	reconcile()
	reconcile()
	if err := c.Delete(ctx, &health); err != nil {
		t.Fatal(err)
	}
	reconcile()
	want := []string{"AggregateStatus: Widget.example.io", "AggregateStatus: Widget.example.io; InterpretHealth: Widget.example.io"}
	if !reflect.DeepEqual(told, want) {
		t.Errorf("told %q, want %q", told, want)
	}
}
