package webhook

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/test/cluster"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

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

// TestReconcilerServesTheLiveSet runs the reconciler against a real host API server: a configuration created,
// broken and deleted changes what the layer answers, and the refusal shows as an Event.
func TestReconcilerServesTheLiveSet(t *testing.T) {
	url, ca := answering(t, func(r *ResourceInterpreterRequest) *ResourceInterpreterResponse {
		return &ResourceInterpreterResponse{UID: r.UID, Successful: true, Healthy: ptr.To(true)}
	})
	host := cluster.New(t, cluster.Options{Name: "host"})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := host.InstallCRDs(ctx, fedtest.CRDDir()); err != nil {
		t.Fatal(err)
	}
	layer := NewLayer()
	mgr := fedtest.StartManager(t, host.Config(), func(mgr ctrl.Manager) error {
		return (&Reconciler{Client: mgr.GetClient(), Layer: layer, Recorder: fedtest.Recorder(t, mgr, "fedmesh-interpreter-webhook")}).SetupWithManager(mgr)
	})
	c := mgr.GetClient()
	healthy := func() (bool, string) {
		if !layer.Handles(widgetGVK, interpreter.InterpretHealth) {
			return false, "not handled"
		}
		ok, err := layer.InterpretHealth(ctx, widget())
		if err != nil {
			return false, err.Error()
		}
		return ok, "unhealthy"
	}
	event := func(name, reason, text string) func() (bool, string) {
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
				seen = append(seen, e.Reason+": "+e.Message)
			}
			return false, strings.Join(seen, " | ")
		}
	}

	cfg := config("widgets", url, ca, interpreter.InterpretHealth)
	if err := c.Create(ctx, &cfg); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the webhook answers over TLS", healthy)
	eventually(t, "a serving Event", event("widgets", ReasonServing, "serving 1 webhooks"))

	// The reconciler wrote the status since.
	if err := c.Get(ctx, client.ObjectKeyFromObject(&cfg), &cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Webhooks[0].ClientConfig.CABundle = []byte("not a certificate")
	if err := c.Update(ctx, &cfg); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a refusal Event", event("widgets", ReasonRefused,
		`webhook "widgets.example.io": clientConfig.caBundle holds no PEM certificate; its last accepted version (generation 1) keeps serving`))
	if ok, msg := healthy(); !ok {
		t.Fatalf("after the bad update: %s", msg)
	}

	if err := c.Delete(ctx, &cfg); err != nil {
		t.Fatal(err)
	}
	eventually(t, "nothing handles Widget", func() (bool, string) {
		return !layer.Handles(widgetGVK, interpreter.InterpretHealth), "still handled"
	})
}
