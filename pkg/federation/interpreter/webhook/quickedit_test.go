package webhook

import (
	"fmt"
	"testing"

	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/interpretertest"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// Generation 1 is accepted and kept in the status; generation 2 (the webhook moved to a new server) is accepted and
// served, but the next edit, generation 3 (a bad CA bundle), lands before generation 2's status write, which
// conflicts. What serves then is generation 2, the newest this federator accepted, not the older one the status kept.
func TestQuickEditsKeepTheNewestAcceptedVersion(t *testing.T) {
	oldURL, oldCA := answering(t, func(r *ResourceInterpreterRequest) *ResourceInterpreterResponse {
		return &ResourceInterpreterResponse{UID: r.UID, Successful: true, Healthy: ptr.To(false)}
	})
	newURL, newCA := answering(t, func(r *ResourceInterpreterRequest) *ResourceInterpreterResponse {
		return &ResourceInterpreterResponse{UID: r.UID, Successful: true, Healthy: ptr.To(true)}
	})
	_, c := fedtest.Host(t)
	ctx := t.Context()
	var beforeWrite func()
	ic := interpretertest.StatusHooked{Client: c, Before: func() {
		if f := beforeWrite; f != nil {
			beforeWrite = nil
			f()
		}
	}}
	cfg := config("widgets", oldURL, oldCA, interpreter.InterpretHealth)
	if err := c.Create(ctx, &cfg); err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Client: ic, Layer: NewLayer(), Recorder: record.NewFakeRecorder(100)}
	if _, err := r.Reconcile(ctx, setRequest); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(&cfg), &cfg); err != nil {
		t.Fatal(err)
	}
	// gen2: the webhook moves to the new server.
	cfg.Webhooks[0].ClientConfig.URL, cfg.Webhooks[0].ClientConfig.CABundle = ptr.To(newURL), newCA
	if err := c.Update(ctx, &cfg); err != nil {
		t.Fatal(err)
	}
	// gen3 lands between the pass's read of gen2 and its status write.
	beforeWrite = func() {
		cfg.Webhooks[0].TimeoutSeconds = ptr.To[int32](2)
		cfg.Webhooks[0].ClientConfig.CABundle = []byte("not a certificate")
		if err := c.Update(ctx, &cfg); err != nil {
			t.Error(err)
		}
	}
	if _, err := r.Reconcile(ctx, setRequest); err != nil {
		t.Fatal(err)
	}
	ok, err := r.Layer.InterpretHealth(ctx, widget())
	if err != nil || !ok {
		t.Fatalf("generation 2 does not serve after its pass: healthy=%v err=%v", ok, err)
	}
	if _, err := r.Reconcile(ctx, setRequest); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(&cfg), &cfg); err != nil {
		t.Fatal(err)
	}
	if kept := cfg.Status.LastAccepted; kept == nil || kept.Generation != 2 {
		t.Errorf("status.lastAccepted %v, want generation 2 kept for every federator", keptGeneration(kept))
	}
	ok, err = r.Layer.InterpretHealth(ctx, widget())
	if err != nil || !ok {
		t.Fatalf("generation 3 refused: healthy=%v err=%v: generation 1's webhook (the old server) answers, not generation 2's, which this federator accepted and served", ok, err)
	}
}

func keptGeneration(kept *configv1alpha1.AcceptedWebhooks) string {
	if kept == nil {
		return "none"
	}
	return fmt.Sprintf("generation %d", kept.Generation)
}
