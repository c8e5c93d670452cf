package customization

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// TestRefusedCustomizationsLastGoodVersionServesAfterARestart: a reconciler that starts after a customization's
// broken edit (a restarted federator, or another shard) serves its last good version too.
func TestRefusedCustomizationsLastGoodVersionServesAfterARestart(t *testing.T) {
	ctx := context.Background()
	c := ric("widget-health", 1, 0, good)
	cl := fake.NewClientBuilder().WithScheme(fedtest.Scheme()).WithObjects(&c).
		WithStatusSubresource(&configv1alpha1.ResourceInterpreterCustomization{}).Build()
	running := &Reconciler{Client: cl, Layer: NewLayer(), Recorder: record.NewFakeRecorder(100)}
	if _, err := running.Reconcile(ctx, setRequest); err != nil {
		t.Fatal(err)
	}
	if !running.Layer.Handles(widgetGVK, interpreter.InterpretHealth) {
		t.Fatal("the good customization does not serve")
	}
	if err := cl.Get(ctx, client.ObjectKey{Name: c.Name}, &c); err != nil {
		t.Fatal(err)
	}
	c.Spec.Customizations.HealthInterpretation.LuaScript = broken
	c.Generation = 2 // as the API server bumps it on a spec change
	if err := cl.Update(ctx, &c); err != nil {
		t.Fatal(err)
	}
	if _, err := running.Reconcile(ctx, setRequest); err != nil {
		t.Fatal(err)
	}
	if !running.Layer.Handles(widgetGVK, interpreter.InterpretHealth) {
		t.Fatal("the running federator dropped the previous version")
	}
	restarted := &Reconciler{Client: cl, Layer: NewLayer(), Recorder: record.NewFakeRecorder(100)}
	if _, err := restarted.Reconcile(ctx, setRequest); err != nil {
		t.Fatal(err)
	}
	if !restarted.Layer.Handles(widgetGVK, interpreter.InterpretHealth) {
		t.Fatal("after a restart (or in another shard) the previous version of the refused customization does not serve")
	}
}

// TestLastGoodVersionServesInEveryShard runs two federators' reconcilers (two shards) against a real API server with
// the real CRD, breaks a customization, and starts a third (a restart): all three serve its last accepted version,
// the status and `kubectl get` say so, the refusal is reported once, and the shards do not write over each other.
func TestLastGoodVersionServesInEveryShard(t *testing.T) {
	host, cl := fedtest.Host(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var recorders []*fedtest.Events
	start := func() *Layer {
		layer, events := NewLayer(), &fedtest.Events{}
		recorders = append(recorders, events)
		fedtest.StartManager(t, host.Config(), func(mgr ctrl.Manager) error {
			return (&Reconciler{Client: mgr.GetClient(), Layer: layer, Recorder: events}).SetupWithManager(mgr)
		})
		return layer
	}
	healthy := func(layer *Layer) func() (bool, string) {
		return func() (bool, string) {
			if !layer.Handles(widgetGVK, interpreter.InterpretHealth) {
				return false, "Widget's health is not handled"
			}
			ok, err := layer.InterpretHealth(ctx, widget())
			if err != nil {
				return false, err.Error()
			}
			return ok, "unhealthy: not the last accepted version"
		}
	}
	var c configv1alpha1.ResourceInterpreterCustomization
	status := func(accepted metav1.ConditionStatus, reason string, served, kept int64, message string) func() (bool, string) {
		return func() (bool, string) {
			if err := cl.Get(ctx, client.ObjectKey{Name: "widget-health"}, &c); err != nil {
				return false, err.Error()
			}
			cond := meta.FindStatusCondition(c.Status.Conditions, configv1alpha1.CustomizationConditionAccepted)
			var keptGen int64
			if c.Status.LastAccepted != nil {
				keptGen = c.Status.LastAccepted.Generation
			}
			ok := cond != nil && cond.Status == accepted && cond.Reason == reason && strings.Contains(cond.Message, message) &&
				cond.ObservedGeneration == c.Generation && c.Status.ObservedGeneration == c.Generation &&
				c.Status.ServedGeneration == served && keptGen == kept
			return ok, fmt.Sprintf("generation %d, status %+v", c.Generation, c.Status)
		}
	}
	shardA, shardB := start(), start()

	c = ric("widget-health", 0, 0, good)
	c.CreationTimestamp = metav1.Time{}
	if err := cl.Create(ctx, &c); err != nil {
		t.Fatal(err)
	}
	eventually(t, "shard A serves the first version", healthy(shardA))
	eventually(t, "shard B serves the first version", healthy(shardB))
	eventually(t, "the status keeps the first version", status(metav1.ConditionTrue, configv1alpha1.CustomizationReasonAccepted, 1, 1,
		"serving 1 scripts for example.io/v1, Widget"))

	c.Spec.Customizations.HealthInterpretation.LuaScript = broken
	if err := cl.Update(ctx, &c); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the status refuses the broken version and serves the first", status(metav1.ConditionFalse,
		configv1alpha1.CustomizationReasonInvalidScript, 1, 1,
		"near 'return': syntax error; its last accepted version (generation 1) keeps serving"))
	for name, layer := range map[string]*Layer{"shard A": shardA, "shard B": shardB} {
		if ok, msg := healthy(layer)(); !ok {
			t.Fatalf("%s after the broken edit: %s", name, msg)
		}
	}
	restarted := start()
	eventually(t, "a restarted federator serves the last accepted version", healthy(restarted))

	// Three federators agree: none writes the status again.
	rv := c.ResourceVersion
	time.Sleep(2 * time.Second)
	if err := cl.Get(ctx, client.ObjectKey{Name: c.Name}, &c); err != nil {
		t.Fatal(err)
	}
	if c.ResourceVersion != rv {
		t.Errorf("the status was written again: resourceVersion %s, then %s: %+v", rv, c.ResourceVersion, c.Status)
	}
	var refusals []string
	for _, events := range recorders {
		for _, e := range events.All() {
			if strings.Contains(e, ReasonRefused) {
				refusals = append(refusals, e)
			}
		}
	}
	if len(refusals) != 1 {
		t.Errorf("the refusal is reported %d times, want once: %q", len(refusals), refusals)
	}

	// kubectl get shows the refusal.
	row := printed(t, host.Config(), "/apis/config.fedmesh.io/v1alpha1/resourceinterpretercustomizations/widget-health")
	for column, want := range map[string]string{"Accepted": "False", "Reason": "InvalidScript", "Serving": "1"} {
		if row[column] != want {
			t.Errorf("kubectl get: %s is %q, want %q (row %v)", column, row[column], want, row)
		}
	}
	if !strings.Contains(row["Message"], "keeps serving") {
		t.Errorf("kubectl get -o wide: Message is %q", row["Message"])
	}
}

// printed is the row the API server prints for path (as kubectl get -o wide shows it), by column name.
func printed(t *testing.T, cfg *rest.Config, path string) map[string]string {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodGet, strings.TrimSuffix(cfg.Host, "/")+path+"?includeObject=None", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var table metav1.Table
	if err := json.NewDecoder(resp.Body).Decode(&table); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || len(table.Rows) != 1 {
		t.Fatalf("GET %s as a table: %s, %d rows", path, resp.Status, len(table.Rows))
	}
	row := map[string]string{}
	for i, col := range table.ColumnDefinitions {
		row[col.Name] = fmt.Sprint(table.Rows[0].Cells[i])
	}
	return row
}
