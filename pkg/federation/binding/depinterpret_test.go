package binding

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
	interpreterwebhook "github.com/fedmesh/fedmesh/pkg/federation/interpreter/webhook"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/rendering"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// TestFailingDependencyWebhookIsTold: while the webhook that finds a Deployment's dependencies answers HTTP 500,
// a template edit is held back (the Work keeps what it had: without its dependencies known, a Work would drop
// them), and the binding says why, as for the other problems of rendering: FullyApplied False RenderFailed, and
// one Warning Event however often the pass is retried. Once the webhook answers again, the retried pass writes
// the edit.
func TestFailingDependencyWebhookIsTold(t *testing.T) {
	var down atomic.Bool
	var calls atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if down.Load() {
			http.Error(w, "dependency service down", http.StatusInternalServerError)
			return
		}
		var ask interpreterwebhook.ResourceInterpreterContext
		if err := json.NewDecoder(r.Body).Decode(&ask); err != nil || ask.Request == nil {
			http.Error(w, fmt.Sprintf("bad request: %v", err), http.StatusBadRequest)
			return
		}
		answer := interpreterwebhook.ResourceInterpreterContext{
			TypeMeta: metav1.TypeMeta{APIVersion: interpreterwebhook.ContextAPIVersion, Kind: interpreterwebhook.ContextKind},
			Response: &interpreterwebhook.ResourceInterpreterResponse{UID: ask.Request.UID, Successful: true,
				Dependencies: []interpreter.DependentObjectReference{{APIVersion: "v1", Kind: "ConfigMap", Namespace: "demo", Name: "conf"}}},
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&answer)
	}))
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})

	f := fedtest.Start(t, fedtest.Options{Members: 1})
	ctx := context.Background()
	h := f.Host
	must(t, h.Create(ctx, &configv1alpha1.ResourceInterpreterWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "deps"},
		Webhooks: []configv1alpha1.ResourceInterpreterWebhook{{
			Name:         "deps.example.io",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(srv.URL), CABundle: ca},
			Rules: []configv1alpha1.RuleWithOperations{{Operations: []configv1alpha1.InterpreterOperation{interpreter.InterpretDependency},
				Rule: configv1alpha1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Kinds: []string{"Deployment"}}}},
			InterpreterContextVersions: []string{"v1alpha1"},
		}},
	}))
	events := &fedtest.Events{}
	startStages(t, f, func(r *Reconciler, mgr ctrl.Manager) {
		hooks := interpreterwebhook.NewLayer()
		wr := &interpreterwebhook.Reconciler{Client: mgr.GetClient(), Layer: hooks, Recorder: fedtest.Recorder(t, mgr, "fedmesh-interpreter-webhook")}
		must(t, wr.Load(context.Background(), mgr.GetAPIReader()))
		must(t, wr.SetupWithManager(mgr))
		r.Interpreter = interpreter.Layers{Webhook: hooks, Native: native.New()}.Chain()
		r.Recorder = events
	})
	must(t, h.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "demo"}}))
	must(t, h.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "conf"}, Data: map[string]string{"k": "v"}}))
	deploy := webDeployment("demo", 2)
	must(t, h.Create(ctx, deploy))
	b := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: names.Binding("Deployment", deploy.Name)},
		Spec: workv1alpha1.ResourceBindingSpec{
			Resource:      workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "demo", Name: deploy.Name, UID: deploy.UID},
			Replicas:      2,
			PropagateDeps: true,
			Clusters:      []workv1alpha1.TargetCluster{{Name: "member1", Replicas: 2}},
		},
	}
	must(t, h.Create(ctx, b))
	work := names.Work(b.Name, "member1")
	workHolds := func(image string) func() error {
		return func() error {
			_, ms, err := getWork(ctx, h, work)
			if err != nil {
				return err
			}
			if got := kinds(ms); len(ms) != 2 || got[1] != "ConfigMap/conf" || imageOf(ms[0]) != image {
				return fmt.Errorf("manifests %v, image %s; want the Deployment of %s and its ConfigMap", got, imageOf(ms[0]), image)
			}
			return nil
		}
	}
	eventually(t, "the Work, with the dependency the webhook found", workHolds("nginx:1.27"))

	down.Store(true)
	before := calls.Load()
	must(t, h.Get(ctx, client.ObjectKeyFromObject(deploy), deploy))
	deploy.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
	must(t, h.Update(ctx, deploy))
	touch(ctx, t, h, b, deploy.ResourceVersion)
	const told = `member1: find dependencies: webhook "deps.example.io" of "deps": InterpretDependency answered HTTP 500: ` +
		`dependency service down (its previous Work is kept)`
	waitCondition(ctx, t, h, b, metav1.ConditionFalse, rendering.ReasonRenderFailed, told)
	// The pass is retried while the webhook fails, and told of once.
	eventually(t, "the failing pass retried", func() error {
		if n := calls.Load() - before; n < 3 {
			return fmt.Errorf("%d calls since the webhook failed", n)
		}
		return nil
	})
	must(t, workHolds("nginx:1.27")())
	var warnings []string
	for _, e := range events.All() {
		if strings.Contains(e, " Warning ") {
			warnings = append(warnings, e)
		}
	}
	if want := b.Name + ": Warning " + rendering.ReasonRenderFailed + " " + told; len(warnings) != 1 || warnings[0] != want {
		t.Fatalf("warnings %q; want one: %q", warnings, want)
	}

	down.Store(false)
	fedtest.Eventually(t, 30*time.Second, "the edit written once the webhook answers", workHolds("nginx:1.28"))
	setApplied(ctx, t, h, work, metav1.ConditionTrue, "Applied", "")
	waitCondition(ctx, t, h, b, metav1.ConditionTrue, rendering.ReasonFullyApplied, "applied in 1 cluster(s)")
}
