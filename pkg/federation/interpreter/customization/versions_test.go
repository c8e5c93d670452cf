package customization

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/declarative"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// otherVersion stands in for a federator of another fedmesh version during an upgrade: whenever a customization's
// status differs from its own verdict, it writes its verdict, as the reconciler did before it let others be; it
// counts its writes.
type otherVersion struct {
	verdict func(c *configv1alpha1.ResourceInterpreterCustomization)
	writes  atomic.Int64
}

func (o *otherVersion) setup(mgr ctrl.Manager) error {
	cl := mgr.GetClient()
	return ctrl.NewControllerManagedBy(mgr).Named("other-version").For(&configv1alpha1.ResourceInterpreterCustomization{}).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			var cur configv1alpha1.ResourceInterpreterCustomization
			if err := cl.Get(ctx, req.NamespacedName, &cur); err != nil {
				return reconcile.Result{}, client.IgnoreNotFound(err)
			}
			want := cur.DeepCopy()
			o.verdict(want)
			if equality.Semantic.DeepEqual(cur.Status, want.Status) {
				return reconcile.Result{}, nil
			}
			if err := cl.Status().Update(ctx, want); err != nil {
				return reconcile.Result{}, err
			}
			o.writes.Add(1)
			return reconcile.Result{}, nil
		}))
}

// TestTwoVersionsDoNotFightOverTheStatus runs two shards of this version beside a federator of another version
// that judges a customization otherwise (in other words only, or refusing it outright) against a real API server:
// after a write or two each they leave the status alone, and the shards do not rebuild what they serve.
func TestTwoVersionsDoNotFightOverTheStatus(t *testing.T) {
	host, cl := fedtest.Host(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	accepted := func(status metav1.ConditionStatus, reason, msg string, served bool) func(c *configv1alpha1.ResourceInterpreterCustomization) {
		return func(c *configv1alpha1.ResourceInterpreterCustomization) {
			c.Status.ObservedGeneration = c.Generation
			c.Status.ServedGeneration = 0
			if served {
				c.Status.ServedGeneration = c.Generation
			}
			meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: configv1alpha1.CustomizationConditionAccepted,
				Status: status, Reason: reason, Message: msg, ObservedGeneration: c.Generation})
		}
	}
	for _, tc := range []struct {
		name, kind string
		verdict    func(c *configv1alpha1.ResourceInterpreterCustomization)
	}{
		{"in other words", "Widget", accepted(metav1.ConditionTrue, configv1alpha1.CustomizationReasonAccepted,
			"accepted by fedmesh 0.9", true)},
		{"refusing it", "Gadget", accepted(metav1.ConditionFalse, configv1alpha1.CustomizationReasonInvalidScript,
			"fedmesh 0.9 cannot load it", false)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			other := &otherVersion{verdict: tc.verdict}
			var layers []*Layer
			var events []*fedtest.Events
			for range 2 {
				layer, ev := NewLayer(), &fedtest.Events{}
				layers, events = append(layers, layer), append(events, ev)
				fedtest.StartManager(t, host.Config(), func(mgr ctrl.Manager) error {
					return (&Reconciler{Client: mgr.GetClient(), Layer: layer, Recorder: ev}).SetupWithManager(mgr)
				})
			}
			fedtest.StartManager(t, host.Config(), other.setup)

			c := onKind(ric(strings.ToLower(tc.kind)+"-health", 0, 0, good), tc.kind)
			c.CreationTimestamp = metav1.Time{}
			if err := cl.Create(ctx, &c); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cl.Delete(context.Background(), &c) })
			gvk := widgetGVK
			gvk.Kind = tc.kind
			eventually(t, "both shards serve the customization and the other version wrote its verdict", func() (bool, string) {
				for _, l := range layers {
					if !l.Handles(gvk, interpreter.InterpretHealth) {
						return false, "a shard does not serve it"
					}
				}
				return other.writes.Load() > 0, "the other version has not written"
			})
			built := []*declarative.Interpreter{layers[0].Current(), layers[1].Current()}

			time.Sleep(3 * time.Second)
			settled := other.writes.Load()
			time.Sleep(2 * time.Second)
			t.Logf("the other version wrote the status %d times", settled)
			if n := other.writes.Load(); n != settled || n > 3 {
				t.Errorf("the other version wrote the status %d times in 3s and %d more in the next 2s: the versions "+
					"take turns writing it", settled, n-settled)
			}
			for i, l := range layers {
				if l.Current() != built[i] {
					t.Errorf("shard %d rebuilt its layer though what it serves did not change", i)
				}
				if all := events[i].All(); len(all) > 3 {
					t.Errorf("shard %d reported %d changes of standing, the first %q", i, len(all), all[0])
				}
			}
		})
	}
}
