package status

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// failingStatus is the native interpreter with a status script that fails, as a broken customization's would.
type failingStatus struct{ interpreter.Interpreter }

func (failingStatus) Handles(schema.GroupVersionKind, interpreter.Operation) bool { return true }
func (failingStatus) InterpretStatus(context.Context, *unstructured.Unstructured) (*runtime.RawExtension, error) {
	return nil, errors.New("ReflectStatus: attempt to index a nil value")
}

// A status script failing on a member's object keeps the status recorded last for it (the cluster stays in the
// aggregated status) and says so on the Work.
func TestFailingStatusScriptKeepsTheLastStatus(t *testing.T) {
	f := fedtest.Start(t, fedtest.Options{Members: 1})
	ctx := context.Background()
	host, m := f.Host, f.Members[0]
	createNamespace(t, f.Federation.Host, m)
	d := fedtest.Deployment(ns, "web", 1)
	d.Labels[names.ManagedLabel] = "true" // as the execution stage marks what it applies
	if _, err := m.Clientset().AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w := work(t, "web-deployment", m.Name(), fedtest.Deployment(ns, "web", 1))
	if err := host.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	id := workv1alpha1.ResourceIdentifier{Ordinal: 0, Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Namespace: ns, Name: "web"}
	last := &runtime.RawExtension{Raw: []byte(`{"replicas":7}`)}
	w.Status.ManifestStatuses = []workv1alpha1.ManifestStatus{{Identifier: id, Status: last, Health: workv1alpha1.ResourceHealthy}}
	if err := host.Status().Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	mc := memberClient(m.Name(), m.Config())
	events := &fedtest.Events{}
	fedtest.StartManager(t, f.Federation.Host.Config(), func(mgr ctrl.Manager) error {
		r := &WorkReconciler{Client: mgr.GetClient(), Members: oneMember{mc}, Verdicts: appliedVerdicts{},
			Interpreter: failingStatus{interpreter.Layers{Native: native.New()}.Chain()}, Recorder: events}
		return r.SetupWithManager(mgr)
	})
	fedtest.Eventually(t, 20*time.Second, "a Warning event on the Work", func() error {
		if events.Find(w.Name, ReasonReflectStatusFailed, "attempt to index a nil value") == "" {
			return fmt.Errorf("no %s event yet", ReasonReflectStatusFailed)
		}
		return nil
	})
	time.Sleep(time.Second) // the pass's write lands
	var cur workv1alpha1.Work
	if err := host.Get(ctx, client.ObjectKeyFromObject(w), &cur); err != nil {
		t.Fatal(err)
	}
	if ms := cur.Status.ManifestStatuses; len(ms) != 1 || ms[0].Status == nil || string(ms[0].Status.Raw) != `{"replicas":7}` {
		t.Errorf("manifestStatuses %+v, want the last status {\"replicas\":7} kept", ms)
	}
}
