package binding

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
	interpreterwebhook "github.com/fedmesh/fedmesh/pkg/federation/interpreter/webhook"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// A ReviseReplica webhook down while a binding moves from member2 to member1: member1's Work cannot be rendered,
// so member2's stays (the workload would vanish for the outage), and goes once member1's is written.
func TestUntargetedWorkStaysWhileATargetCannotBeRendered(t *testing.T) {
	var down atomic.Bool
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "revise service down", http.StatusInternalServerError)
			return
		}
		var ask interpreterwebhook.ResourceInterpreterContext
		if err := json.NewDecoder(r.Body).Decode(&ask); err != nil || ask.Request == nil {
			http.Error(w, fmt.Sprintf("bad request: %v", err), http.StatusBadRequest)
			return
		}
		patch := fmt.Sprintf(`[{"op":"replace","path":"/spec/replicas","value":%d}]`, *ask.Request.DesiredReplicas)
		answer := interpreterwebhook.ResourceInterpreterContext{
			TypeMeta: metav1.TypeMeta{APIVersion: interpreterwebhook.ContextAPIVersion, Kind: interpreterwebhook.ContextKind},
			Response: &interpreterwebhook.ResourceInterpreterResponse{UID: ask.Request.UID, Successful: true,
				Patch: []byte(patch), PatchType: ptr.To(interpreterwebhook.PatchTypeJSONPatch)},
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&answer)
	}))
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	f := fedtest.Start(t, fedtest.Options{Members: 2})
	ctx := context.Background()
	h := f.Host
	must(t, h.Create(ctx, &configv1alpha1.ResourceInterpreterWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "revise"},
		Webhooks: []configv1alpha1.ResourceInterpreterWebhook{{
			Name:         "revise.example.io",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(srv.URL), CABundle: ca},
			Rules: []configv1alpha1.RuleWithOperations{{Operations: []configv1alpha1.InterpreterOperation{interpreter.ReviseReplica},
				Rule: configv1alpha1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Kinds: []string{"Deployment"}}}},
			InterpreterContextVersions: []string{"v1alpha1"},
		}},
	}))
	startStages(t, f, func(r *Reconciler, mgr ctrl.Manager) {
		hooks := interpreterwebhook.NewLayer()
		wr := &interpreterwebhook.Reconciler{Client: mgr.GetClient(), Layer: hooks, Recorder: fedtest.Recorder(t, mgr, "fedmesh-interpreter-webhook")}
		must(t, wr.Load(context.Background(), mgr.GetAPIReader()))
		must(t, wr.SetupWithManager(mgr))
		r.Interpreter = interpreter.Layers{Webhook: hooks, Native: native.New()}.Chain()
		r.dependencyRetry = time.Second
	})
	must(t, h.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "demo"}}))
	deploy := webDeployment("demo", 2)
	must(t, h.Create(ctx, deploy))
	b := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: names.Binding("Deployment", deploy.GetName())},
		Spec: workv1alpha1.ResourceBindingSpec{
			Resource: workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "demo", Name: deploy.GetName(), UID: deploy.GetUID()},
			Replicas: 2,
			Clusters: []workv1alpha1.TargetCluster{{Name: "member2", Replicas: 2}},
		},
	}
	must(t, h.Create(ctx, b))
	work2 := names.Work(b.Name, "member2")
	eventually(t, "Work "+work2, func() error {
		var w workv1alpha1.Work
		return h.Get(ctx, client.ObjectKey{Namespace: "demo", Name: work2}, &w)
	})

	down.Store(true)
	must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := h.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
			return err
		}
		b.Spec.Clusters = []workv1alpha1.TargetCluster{{Name: "member1", Replicas: 2}}
		return h.Update(ctx, b)
	}))
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) {
		var w workv1alpha1.Work
		err := h.Get(ctx, client.ObjectKey{Namespace: "demo", Name: work2}, &w)
		if err != nil || !w.DeletionTimestamp.IsZero() {
			t.Fatalf("the Work of member2 went while member1's could not be rendered (ReviseReplica down): err=%v deleting=%v", err, w.DeletionTimestamp)
		}
		time.Sleep(200 * time.Millisecond)
	}
	down.Store(false)
	eventually(t, "member1 gets its Work", func() error {
		var w workv1alpha1.Work
		return h.Get(ctx, client.ObjectKey{Namespace: "demo", Name: names.Work(b.Name, "member1")}, &w)
	})
	eventually(t, "the Work of member2, no longer targeted, deleted", func() error { return gone(ctx, h, work2) })
}

func TestTakeoverUnwritten(t *testing.T) {
	for _, tc := range []struct {
		name string
		errs map[string]error
		want bool
	}{
		{name: "every Work rendered", want: false},
		{name: "an interpreter or override failing", errs: map[string]error{"m1": errors.New("ReviseReplica answered HTTP 500")}, want: true},
		{name: "a cluster being deleted", errs: map[string]error{"m1": clusterLeavingError("m1")}, want: false},
		{name: "a cluster that does not exist", errs: map[string]error{"m1": fmt.Errorf("cluster m1 %w", errNoCluster)}, want: false},
		{name: "no name left", errs: map[string]error{"m1": fmt.Errorf("%w: a and b", errNamesHeld)}, want: false},
		{name: "one of each", errs: map[string]error{"m1": clusterLeavingError("m1"), "m2": errors.New("override failed")}, want: true},
		{name: "a cluster keeping its previous Work", errs: map[string]error{"m3": errors.New("override failed")}, want: false},
	} {
		o := &outcome{renderErrors: tc.errs, works: map[string]*workv1alpha1.Work{"m3": {}}}
		if got := takeoverUnwritten(o); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
