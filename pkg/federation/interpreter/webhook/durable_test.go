package webhook

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// TestRefusedConfigurationsLastAcceptedVersionServesAfterARestart: a federator that starts after a configuration's
// refused edit (a restarted federator, or another shard) serves its last accepted version too, which the status
// keeps and names; so does the federator that saw the edit, though it came before its first status write (between
// its Load and its first Reconcile).
func TestRefusedConfigurationsLastAcceptedVersionServesAfterARestart(t *testing.T) {
	url, ca := answering(t, func(r *ResourceInterpreterRequest) *ResourceInterpreterResponse {
		return &ResourceInterpreterResponse{UID: r.UID, Successful: true, Healthy: ptr.To(true)}
	})
	_, c := fedtest.Host(t)
	ctx := t.Context()
	cfg := config("widgets", url, ca, interpreter.InterpretHealth)
	if err := c.Create(ctx, &cfg); err != nil {
		t.Fatal(err)
	}
	load := func() *Reconciler {
		t.Helper()
		r := &Reconciler{Client: c, Layer: NewLayer(), Recorder: record.NewFakeRecorder(100)}
		if err := r.Load(ctx, c); err != nil {
			t.Fatal(err)
		}
		return r
	}
	start := func() *Reconciler {
		t.Helper()
		r := load()
		if _, err := r.Reconcile(ctx, setRequest); err != nil {
			t.Fatal(err)
		}
		return r
	}
	healthy := func(r *Reconciler) (bool, string) {
		if !r.Layer.Handles(widgetGVK, interpreter.InterpretHealth) {
			return false, "Widget's health is not handled"
		}
		ok, err := r.Layer.InterpretHealth(ctx, widget())
		if err != nil {
			return false, err.Error()
		}
		return ok, "unhealthy"
	}
	running := load()
	if ok, msg := healthy(running); !ok {
		t.Fatalf("the good configuration does not serve: %s", msg)
	}

	cfg.Webhooks[0].ClientConfig.CABundle = []byte("not a certificate")
	if err := c.Update(ctx, &cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := running.Reconcile(ctx, setRequest); err != nil {
		t.Fatal(err)
	}
	if ok, msg := healthy(running); !ok {
		t.Fatalf("the running federator dropped the last accepted version: %s", msg)
	}
	if ok, msg := healthy(start()); !ok {
		t.Fatalf("after a restart (or in another shard) the last accepted version does not serve: %s", msg)
	}

	if err := c.Get(ctx, client.ObjectKeyFromObject(&cfg), &cfg); err != nil {
		t.Fatal(err)
	}
	st := cfg.Status
	cond := meta.FindStatusCondition(st.Conditions, configv1alpha1.WebhookConfigurationConditionAccepted)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != configv1alpha1.WebhookConfigurationReasonInvalidWebhook ||
		cond.ObservedGeneration != 2 || !strings.Contains(cond.Message, "caBundle holds no PEM certificate; its last accepted version (generation 1) keeps serving") {
		t.Errorf("Accepted condition %+v, want False, InvalidWebhook, of generation 2, saying generation 1 keeps serving", cond)
	}
	if st.ObservedGeneration != 2 || st.ServedGeneration != 1 || st.LastAccepted == nil || st.LastAccepted.Generation != 1 ||
		len(st.LastAccepted.Webhooks) != 1 || string(st.LastAccepted.Webhooks[0].ClientConfig.CABundle) != string(ca) {
		t.Errorf("status %+v, want generation 2 observed, 1 served and kept with its CA bundle", st)
	}
}

// TestRecreatedConfigurationServesItsOwnWebhooks: a configuration deleted and created again under its name (kubectl
// replace --force, a Helm reinstall) has generation 1 again; when one pass sees only the new one (the events
// coalesce in the reconciler's single-key queue), its webhooks serve, not the deleted one's.
func TestRecreatedConfigurationServesItsOwnWebhooks(t *testing.T) {
	oldURL, oldCA := answering(t, func(r *ResourceInterpreterRequest) *ResourceInterpreterResponse {
		return &ResourceInterpreterResponse{UID: r.UID, Successful: true, Healthy: ptr.To(false)}
	})
	newURL, newCA := answering(t, func(r *ResourceInterpreterRequest) *ResourceInterpreterResponse {
		return &ResourceInterpreterResponse{UID: r.UID, Successful: true, Healthy: ptr.To(true)}
	})
	_, c := fedtest.Host(t)
	ctx := t.Context()
	cfg := config("widgets", oldURL, oldCA, interpreter.InterpretHealth)
	if err := c.Create(ctx, &cfg); err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Client: c, Layer: NewLayer(), Recorder: record.NewFakeRecorder(100)}
	if _, err := r.Reconcile(ctx, setRequest); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, &cfg); err != nil {
		t.Fatal(err)
	}
	again := config("widgets", newURL, newCA, interpreter.InterpretHealth)
	if err := c.Create(ctx, &again); err != nil {
		t.Fatal(err)
	}
	if again.Generation != cfg.Generation {
		t.Fatalf("the configuration created again has generation %d, the first %d: not the case this test is about",
			again.Generation, cfg.Generation)
	}
	if _, err := r.Reconcile(ctx, setRequest); err != nil {
		t.Fatal(err)
	}
	healthy, err := r.Layer.InterpretHealth(ctx, widget())
	if err != nil {
		t.Fatal(err)
	}
	if !healthy {
		t.Fatalf("the deleted configuration's webhook (%s) answers, not the new one's (%s)", oldURL, newURL)
	}
}
