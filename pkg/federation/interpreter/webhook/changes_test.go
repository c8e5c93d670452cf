package webhook

import (
	"context"
	"reflect"
	"testing"

	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/rerun"
)

// listing is a reader listing the configurations it holds.
type listing struct {
	client.Reader // nil: only List is called
	configs       []configv1alpha1.ResourceInterpreterWebhookConfiguration
}

func (l *listing) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	list.(*configv1alpha1.ResourceInterpreterWebhookConfigurationList).Items = append([]configv1alpha1.ResourceInterpreterWebhookConfiguration(nil), l.configs...)
	return nil
}

// The set loaded at startup is told to no one; each later pass tells what its new set changed, and a pass that
// changes nothing, or whose new version is refused (the previous one keeps serving), tells nothing.
func TestReconcilerTellsWhatEachNewSetChanged(t *testing.T) {
	health := config("health", "https://127.0.0.1:1/x", nil, interpreter.InterpretHealth)
	health.Generation = 1
	reader := &listing{configs: []configv1alpha1.ResourceInterpreterWebhookConfiguration{health}}
	var told []string
	changes := &rerun.Notifier{}
	changes.Subscribe(func(a interpreter.Affected) { told = append(told, a.String()) })
	r := &Reconciler{Client: reader, Layer: NewLayer(), Recorder: record.NewFakeRecorder(100), Changes: changes}
	ctx := t.Context()
	reconcile := func() {
		t.Helper()
		if _, err := r.Reconcile(ctx, setRequest); err != nil {
			t.Fatal(err)
		}
	}

	if err := r.Load(ctx, reader); err != nil {
		t.Fatal(err)
	}
	reconcile()
	if len(told) != 0 {
		t.Fatalf("after Load and a pass over the same set, told %q; want nothing", told)
	}

	retain := config("retain", "https://127.0.0.1:1/x", nil, interpreter.Retain)
	retain.Generation = 1
	reader.configs = append(reader.configs, retain)
	reconcile()
	refused := *health.DeepCopy()
	refused.Generation = 2
	refused.Webhooks[0].InterpreterContextVersions = []string{"v1beta1"}
	reader.configs = []configv1alpha1.ResourceInterpreterWebhookConfiguration{refused, retain}
	reconcile()
	reader.configs = []configv1alpha1.ResourceInterpreterWebhookConfiguration{refused}
	reconcile()
	want := []string{"Retain: Widget.example.io", "Retain: Widget.example.io"}
	if !reflect.DeepEqual(told, want) {
		t.Errorf("told %q, want %q", told, want)
	}
}
