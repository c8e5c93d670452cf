package customization

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/test/cluster"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

var widgetGVK = schema.GroupVersionKind{Group: "example.io", Version: "v1", Kind: "Widget"}

func widget() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(widgetGVK)
	u.SetName("w")
	return u
}

// eventually polls cond every 50ms for up to 20s.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var ok bool
		if ok, last = cond(); ok {
			return
		}
	}
	t.Fatalf("%s: not after 20s; last: %s", what, last)
}

// TestReconcilerServesTheLiveSet runs the reconciler against a real host API server: customizations created,
// broken, conflicting and deleted change what the layer answers, and refusals show as Events.
func TestReconcilerServesTheLiveSet(t *testing.T) {
	host := cluster.New(t, cluster.Options{Name: "host"})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := host.InstallCRDs(ctx, fedtest.CRDDir()); err != nil {
		t.Fatal(err)
	}
	layer := NewLayer()
	mgr := fedtest.StartManager(t, host.Config(), func(mgr ctrl.Manager) error {
		return (&Reconciler{Client: mgr.GetClient(), Layer: layer, Recorder: fedtest.Recorder(t, mgr, "fedmesh-interpreter-customization")}).SetupWithManager(mgr)
	})
	c := mgr.GetClient()

	health := func() (bool, string) {
		if !layer.Handles(widgetGVK, interpreter.InterpretHealth) {
			return false, "not handled"
		}
		ok, err := layer.InterpretHealth(ctx, widget())
		if err != nil {
			return false, err.Error()
		}
		return ok, "unhealthy"
	}
	unhealthy := func() (bool, string) { ok, msg := health(); return !ok && msg == "unhealthy", msg }
	events := func(name, reason, text string) func() (bool, string) {
		return func() (bool, string) {
			var list corev1.EventList
			if err := c.List(ctx, &list, client.InNamespace("default")); err != nil {
				return false, err.Error()
			}
			var seen []string
			for _, e := range list.Items {
				if e.InvolvedObject.Name == name && e.Reason == reason && strings.Contains(e.Message, text) {
					return true, ""
				}
				seen = append(seen, e.InvolvedObject.Name+" "+e.Reason+": "+e.Message)
			}
			return false, strings.Join(seen, " | ")
		}
	}

	// A good customization serves.
	good := ric("widget-health", 0, 0, good)
	good.CreationTimestamp = metav1.Time{}
	if err := c.Create(ctx, &good); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new customization serves", health)
	eventually(t, "a serving Event", events("widget-health", ReasonServing, "serving 1 scripts for example.io/v1, Widget"))

	// A broken update is refused with its line, and the previous version keeps serving. (The federator wrote the
	// status since the create: the edit is of the object as it is now.)
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(&good), &good); err != nil {
			return err
		}
		good.Spec.Customizations.HealthInterpretation.LuaScript = "function InterpretHealth(o)\n  if o return false end\nend"
		return c.Update(ctx, &good)
	}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a refusal Event", events("widget-health", ReasonRefused,
		"widget-health:healthInterpretation line:2(column:13) near 'return': syntax error; its last accepted version (generation 1) keeps serving"))
	if ok, msg := health(); !ok {
		t.Fatalf("after the broken update: %s", msg)
	}

	// A second customization of the same operation is refused; the first still answers.
	rival := ric("rival", 0, 0, good2)
	rival.CreationTimestamp = metav1.Time{}
	if err := c.Create(ctx, &rival); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a conflict Event", events("rival", ReasonRefused, `already defined by customization "widget-health"`))
	if ok, msg := health(); !ok {
		t.Fatalf("after the rival: %s", msg)
	}

	// Once the first is deleted, the rival has the operation to itself.
	if err := c.Delete(ctx, &good); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the rival serves", unhealthy)
	// Its generation is the one refused before: what changed is its standing, and that is reported too.
	eventually(t, "a serving Event for the rival", events("rival", ReasonServing, "serving 1 scripts for example.io/v1, Widget"))

	if err := c.Delete(ctx, &rival); err != nil {
		t.Fatal(err)
	}
	eventually(t, "nothing handles Widget", func() (bool, string) {
		return !layer.Handles(widgetGVK, interpreter.InterpretHealth), "still handled"
	})
}
