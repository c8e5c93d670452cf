package webhook

import (
	"strings"
	"testing"

	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
)

// buildNew is Select's builder without a cache.
func buildNew(c *configv1alpha1.ResourceInterpreterWebhookConfiguration, webhooks []configv1alpha1.ResourceInterpreterWebhook) (*Interpreter, error) {
	return New([]configv1alpha1.ResourceInterpreterWebhookConfiguration{{ObjectMeta: c.ObjectMeta, Webhooks: webhooks}})
}

func TestSelectServesTheLastAcceptedVersionOfARefusedConfiguration(t *testing.T) {
	good := config("widgets", "https://127.0.0.1:1/x", nil, interpreter.InterpretHealth)
	kept := func(gen int64, c configv1alpha1.ResourceInterpreterWebhookConfiguration) *configv1alpha1.AcceptedWebhooks {
		return &configv1alpha1.AcceptedWebhooks{Generation: gen, Webhooks: c.Webhooks}
	}
	refused := func(keeps *configv1alpha1.AcceptedWebhooks) configv1alpha1.ResourceInterpreterWebhookConfiguration {
		c := *good.DeepCopy()
		c.Generation = 2
		c.Webhooks[0].InterpreterContextVersions = []string{"v1beta1"}
		c.Status.LastAccepted = keeps
		return c
	}
	accepted := *good.DeepCopy()
	accepted.Generation = 3
	accepted.Status.LastAccepted = kept(1, good)
	for _, tc := range []struct {
		name          string
		config        configv1alpha1.ResourceInterpreterWebhookConfiguration
		serves        bool
		served, keeps int64
		reason, says  string
	}{
		{"accepted", accepted, true, 3, 3, configv1alpha1.WebhookConfigurationReasonAccepted, "serving 1 webhooks"},
		{"refused, an earlier version kept", refused(kept(1, good)), true, 1, 1, configv1alpha1.WebhookConfigurationReasonInvalidWebhook,
			"fedmesh speaks only v1alpha1; its last accepted version (generation 1) keeps serving"},
		{"refused, nothing kept", refused(nil), false, 0, 0, configv1alpha1.WebhookConfigurationReasonInvalidWebhook,
			"no earlier accepted version is kept, so none serves"},
		{"refused, the same version kept (by another fedmesh)", refused(kept(2, refused(nil))), false, 0, 2,
			configv1alpha1.WebhookConfigurationReasonInvalidWebhook, "no earlier accepted version is kept"},
		{"refused, the kept version refused here too", refused(kept(1, refused(nil))), false, 0, 1,
			configv1alpha1.WebhookConfigurationReasonInvalidWebhook,
			"its last accepted version (generation 1) does not build here either, so it is ignored"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			serve, verdicts := Select([]configv1alpha1.ResourceInterpreterWebhookConfiguration{tc.config}, buildNew)
			if got := Merge(serve...).Handles(widgetGVK, interpreter.InterpretHealth); got != tc.serves {
				t.Errorf("serves Widget's health: %t, want %t", got, tc.serves)
			}
			v := verdicts[0]
			var keeps int64
			if v.LastAccepted != nil {
				keeps = v.LastAccepted.Generation
			}
			if v.ServedGeneration != tc.served || keeps != tc.keeps || v.Reason != tc.reason || !strings.Contains(v.Message, tc.says) {
				t.Errorf("verdict serves %d, keeps %d, %s: %q; want %d, %d, %s: %q", v.ServedGeneration, keeps, v.Reason,
					v.Message, tc.served, tc.keeps, tc.reason, tc.says)
			}
		})
	}
}

// TestUnchangedServedSetKeepsTheLayer: a pass after a change that leaves what serves as it was (nothing, a status
// write by another shard, an edit back to the same webhooks) keeps the layer; a change of a webhook builds a new one.
func TestUnchangedServedSetKeepsTheLayer(t *testing.T) {
	ctx := t.Context()
	widgets := config("widgets", "https://127.0.0.1:1/x", nil, interpreter.InterpretHealth)
	widgets.Generation = 1
	cl := fakeHost(&widgets)
	r := &Reconciler{Client: cl, Layer: NewLayer(), Recorder: record.NewFakeRecorder(100)}
	edit := func(status bool, change func(*configv1alpha1.ResourceInterpreterWebhookConfiguration)) func() error {
		return func() error {
			var cur configv1alpha1.ResourceInterpreterWebhookConfiguration
			if err := cl.Get(ctx, client.ObjectKeyFromObject(&widgets), &cur); err != nil {
				return err
			}
			change(&cur)
			if status {
				return cl.Status().Update(ctx, &cur)
			}
			cur.Generation++ // as the API server bumps it on a change
			return cl.Update(ctx, &cur)
		}
	}
	url := func(u string) func(*configv1alpha1.ResourceInterpreterWebhookConfiguration) {
		return func(c *configv1alpha1.ResourceInterpreterWebhookConfiguration) { c.Webhooks[0].ClientConfig.URL = &u }
	}
	steps := []struct {
		name    string
		change  func() error
		rebuilt bool
	}{
		{"nothing changed", nil, false},
		{"another shard rewords the status", edit(true, func(c *configv1alpha1.ResourceInterpreterWebhookConfiguration) {
			c.Status.Conditions[0].Message = "accepted by another shard"
		}), false},
		{"edited back to the same webhooks", edit(false, url("https://127.0.0.1:1/x")), false},
		{"the URL changes", edit(false, url("https://127.0.0.1:2/x")), true},
	}
	if _, err := r.Reconcile(ctx, setRequest); err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		before := r.Layer.Current()
		if s.change != nil {
			if err := s.change(); err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
		}
		if _, err := r.Reconcile(ctx, setRequest); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if rebuilt := r.Layer.Current() != before; rebuilt != s.rebuilt {
			t.Errorf("%s: layer rebuilt %t, want %t", s.name, rebuilt, s.rebuilt)
		}
	}
}
