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
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
	interpreterwebhook "github.com/fedmesh/fedmesh/pkg/federation/interpreter/webhook"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/rendering"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// depsDown is what the binding says of a cluster while the dependency webhook answers HTTP 500.
const depsDown = `find dependencies: webhook "deps.example.io" of "deps": InterpretDependency answered HTTP 500: ` +
	`dependency service down (its previous Work is kept)`

// dependencyWebhook is a federation of members whose Deployments' dependencies a webhook finds (the ConfigMap
// demo/conf), the binding and status stages running with it and retrying a failing pass every half second; the webhook
// fails while down is set, and counts its calls.
type dependencyWebhook struct {
	f      *fedtest.Federation
	events *fedtest.Events
	down   atomic.Bool
	calls  atomic.Int32
}

func startDependencyWebhook(t *testing.T, members int) *dependencyWebhook {
	t.Helper()
	d := &dependencyWebhook{events: &fedtest.Events{}}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.calls.Add(1)
		if d.down.Load() {
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

	d.f = fedtest.Start(t, fedtest.Options{Members: members})
	ctx := context.Background()
	h := d.f.Host
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
	startStages(t, d.f, func(r *Reconciler, mgr ctrl.Manager) {
		hooks := interpreterwebhook.NewLayer()
		wr := &interpreterwebhook.Reconciler{Client: mgr.GetClient(), Layer: hooks, Recorder: fedtest.Recorder(t, mgr, "fedmesh-interpreter-webhook")}
		must(t, wr.Load(context.Background(), mgr.GetAPIReader()))
		must(t, wr.SetupWithManager(mgr))
		r.Interpreter = interpreter.Layers{Webhook: hooks, Native: native.New()}.Chain()
		r.Recorder = d.events
		r.dependencyRetry = 500 * time.Millisecond
	})
	must(t, h.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "demo"}}))
	must(t, h.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "conf"}, Data: map[string]string{"k": "v"}}))
	return d
}

// binding creates the binding of Deployment deploy, propagating its dependencies to clusters.
func (d *dependencyWebhook) binding(ctx context.Context, t *testing.T, deploy client.Object, replicas int32, clusters ...workv1alpha1.TargetCluster) *workv1alpha1.ResourceBinding {
	t.Helper()
	b := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: names.Binding("Deployment", deploy.GetName())},
		Spec: workv1alpha1.ResourceBindingSpec{
			Resource:      workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "demo", Name: deploy.GetName(), UID: deploy.GetUID()},
			Replicas:      replicas,
			PropagateDeps: true,
			Clusters:      clusters,
		},
	}
	must(t, d.f.Host.Create(ctx, b))
	return b
}

// workHolds checks that Work work holds the Deployment of image at replicas, and its ConfigMap.
func workHolds(ctx context.Context, h client.Client, work, image string, replicas int64) func() error {
	return func() error {
		w, ms, err := getWork(ctx, h, work)
		if err != nil {
			return err
		}
		if !w.DeletionTimestamp.IsZero() {
			return fmt.Errorf("Work %s is being deleted", work)
		}
		if got := kinds(ms); len(ms) != 2 || got[1] != "ConfigMap/conf" || imageOf(ms[0]) != image || replicasOf(ms[0]) != replicas {
			return fmt.Errorf("Work %s: manifests %v, image %s, %d replica(s); want the Deployment of %s at %d and its ConfigMap",
				work, got, imageOf(ms[0]), replicasOf(ms[0]), image, replicas)
		}
		return nil
	}
}

// TestFailingDependencyWebhookIsTold: while the webhook that finds a Deployment's dependencies answers HTTP 500,
// a template edit is held back (the Work keeps what it had: without its dependencies known, a Work would drop
// them), and the binding says why, as for the other problems of rendering: FullyApplied False RenderFailed, and
// one Warning Event however often the pass is retried. The pass is retried soon, not after a growing backoff, and
// once the webhook answers again it writes the edit.
func TestFailingDependencyWebhookIsTold(t *testing.T) {
	d := startDependencyWebhook(t, 1)
	ctx := context.Background()
	h := d.f.Host
	deploy := webDeployment("demo", 2)
	must(t, h.Create(ctx, deploy))
	b := d.binding(ctx, t, deploy, 2, workv1alpha1.TargetCluster{Name: "member1", Replicas: 2})
	work := names.Work(b.Name, "member1")
	eventually(t, "the Work, with the dependency the webhook found", workHolds(ctx, h, work, "nginx:1.27", 2))

	d.down.Store(true)
	before := d.calls.Load()
	must(t, h.Get(ctx, client.ObjectKeyFromObject(deploy), deploy))
	deploy.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
	must(t, h.Update(ctx, deploy))
	touch(ctx, t, h, b, deploy.ResourceVersion)
	told := "member1: " + depsDown
	waitCondition(ctx, t, h, b, metav1.ConditionFalse, rendering.ReasonRenderFailed, told)
	// Retried every dependencyRetry (half a second here) while the webhook fails: an error's backoff, doubling
	// from 5ms, would take minutes to reach 15 calls.
	eventually(t, "the failing pass retried", func() error {
		if n := d.calls.Load() - before; n < 15 {
			return fmt.Errorf("%d calls since the webhook failed", n)
		}
		return nil
	})
	must(t, workHolds(ctx, h, work, "nginx:1.27", 2)())
	var warnings []string
	for _, e := range d.events.All() {
		if strings.Contains(e, " Warning ") {
			warnings = append(warnings, e)
		}
	}
	if want := b.Name + ": Warning " + rendering.ReasonRenderFailed + " " + told; len(warnings) != 1 || warnings[0] != want {
		t.Fatalf("warnings %q; want one: %q", warnings, want)
	}

	d.down.Store(false)
	fedtest.Eventually(t, 30*time.Second, "the edit written once the webhook answers", workHolds(ctx, h, work, "nginx:1.28", 2))
	setApplied(ctx, t, h, work, metav1.ConditionTrue, "Applied", "")
	waitCondition(ctx, t, h, b, metav1.ConditionTrue, rendering.ReasonFullyApplied, "applied in 1 cluster(s)")
}

// TestUntargetedWorkStaysWhileDependenciesAreNotFound: a cluster the binding no longer targets (a failover with
// purgeMode Directly, a policy edit, a re-division) keeps its Work while the dependencies cannot be found, for
// the clusters taking over its replicas cannot be rendered meanwhile: deleting it would shrink the workload for
// the whole outage. Once the webhook answers, the replicas move and the Work goes. A cluster being deleted still
// loses its Work at once.
func TestUntargetedWorkStaysWhileDependenciesAreNotFound(t *testing.T) {
	d := startDependencyWebhook(t, 3)
	ctx := context.Background()
	h := d.f.Host
	deploy := webDeployment("demo", 3)
	must(t, h.Create(ctx, deploy))
	b := d.binding(ctx, t, deploy, 3, workv1alpha1.TargetCluster{Name: "member1", Replicas: 1},
		workv1alpha1.TargetCluster{Name: "member2", Replicas: 1}, workv1alpha1.TargetCluster{Name: "member3", Replicas: 1})
	work1, work2, work3 := names.Work(b.Name, "member1"), names.Work(b.Name, "member2"), names.Work(b.Name, "member3")
	for _, w := range []string{work1, work2, work3} {
		eventually(t, "Work "+w, workHolds(ctx, h, w, "nginx:1.27", 1))
	}
	// member3 is being unjoined: held by a finalizer as unjoin holds it, while it is still targeted.
	member3 := &clusterv1alpha1.Cluster{}
	must(t, h.Get(ctx, client.ObjectKey{Name: "member3"}, member3))
	controllerutil.AddFinalizer(member3, "test.fedmesh.io/hold")
	must(t, h.Update(ctx, member3))
	t.Cleanup(func() {
		must(t, h.Get(ctx, client.ObjectKey{Name: "member3"}, member3))
		controllerutil.RemoveFinalizer(member3, "test.fedmesh.io/hold")
		must(t, h.Update(ctx, member3))
	})

	d.down.Store(true)
	// The scheduler moves the replicas of member2 and member3 to member1.
	must(t, h.Delete(ctx, member3))
	retarget(ctx, t, h, b, []workv1alpha1.TargetCluster{{Name: "member1", Replicas: 3}})
	waitCondition(ctx, t, h, b, metav1.ConditionFalse, rendering.ReasonRenderFailed, "member1: "+depsDown)
	eventually(t, "the Work of member3, being deleted, deleted", func() error { return gone(ctx, h, work3) })
	before := d.calls.Load()
	eventually(t, "the failing pass retried", func() error {
		if n := d.calls.Load() - before; n < 2 {
			return fmt.Errorf("%d calls since", n)
		}
		return nil
	})
	must(t, workHolds(ctx, h, work1, "nginx:1.27", 1)())
	must(t, workHolds(ctx, h, work2, "nginx:1.27", 1)())

	d.down.Store(false)
	eventually(t, "member1 takes the replicas", workHolds(ctx, h, work1, "nginx:1.27", 3))
	eventually(t, "the Work of member2, no longer targeted, deleted", func() error { return gone(ctx, h, work2) })
}

// A failover of purgeMode Directly (a workload that must not run twice) takes the Work of the cluster it leaves at
// once, dependencies found or not.
func TestPurgedWorkGoesWhileDependenciesAreNotFound(t *testing.T) {
	d := startDependencyWebhook(t, 2)
	ctx := context.Background()
	h := d.f.Host
	deploy := webDeployment("demo", 2)
	must(t, h.Create(ctx, deploy))
	b := d.binding(ctx, t, deploy, 2, workv1alpha1.TargetCluster{Name: "member1", Replicas: 1},
		workv1alpha1.TargetCluster{Name: "member2", Replicas: 1})
	work2 := names.Work(b.Name, "member2")
	eventually(t, "Work "+work2, workHolds(ctx, h, work2, "nginx:1.27", 1))

	d.down.Store(true)
	must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := h.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
			return err
		}
		b.Spec.Clusters = []workv1alpha1.TargetCluster{{Name: "member1", Replicas: 2}}
		b.Spec.GracefulEvictionTasks = []workv1alpha1.GracefulEvictionTask{{FromCluster: "member2", Reason: "ApplicationFailure",
			Producer: "test", PurgeMode: policyv1alpha1.PurgeModeDirectly}}
		return h.Update(ctx, b)
	}))
	waitCondition(ctx, t, h, b, metav1.ConditionFalse, rendering.ReasonRenderFailed, "member1: "+depsDown)
	eventually(t, "the Work of member2, failed over from with purgeMode Directly, deleted", func() error { return gone(ctx, h, work2) })
}
