package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/execution"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
	"github.com/fedmesh/fedmesh/pkg/federation/member"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/rendering"
	"github.com/fedmesh/fedmesh/pkg/federation/verdicts"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

const ns = "shop"

// TestStatusFlowsUp applies a Deployment to two members with workloads and follows its status up: each Work's
// manifestStatuses, the binding's aggregatedStatus, and the template's summed status; then member2's API server
// stops and its Cluster turns not Ready, and its item turns Unknown instead of staying Healthy.
func TestStatusFlowsUp(t *testing.T) {
	f := fedtest.Start(t, fedtest.Options{Members: 2, Workloads: true})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	host := f.Host
	if err := host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	for _, m := range f.Members {
		if _, err := m.Clientset().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		setReady(t, host, m.Name(), metav1.ConditionTrue)
	}

	var works *WorkReconciler
	var members *forgetting
	fedtest.StartManager(t, f.Federation.Host.Config(), func(mgr ctrl.Manager) error {
		chain := interpreter.Layers{Native: native.New()}.Chain()
		members = &forgetting{Factory: &member.Factory{Host: mgr.GetAPIReader()}}
		applied := &verdicts.Store{Type: workv1alpha1.WorkApplied}
		works = &WorkReconciler{Client: mgr.GetClient(), Members: members, Verdicts: applied, Interpreter: chain, SyncPoll: 200 * time.Millisecond}
		for _, s := range []interface{ SetupWithManager(ctrl.Manager) error }{
			&execution.Reconciler{Client: mgr.GetClient(), Members: members, Retainer: chain, Verdicts: applied,
				Recorder: fedtest.Recorder(t, mgr, "fedmesh-status-test"), Timeout: 3 * time.Second},
			works,
			&BindingReconciler{Client: mgr.GetClient(), Aggregator: chain, Renderings: &rendering.Store{}},
		} {
			if err := s.SetupWithManager(mgr); err != nil {
				return err
			}
		}
		return nil
	})

	rb := bindToMembers(t, f, "web")

	// Each Work: applied, and its Deployment's status with the interpreter's health, both written by this stage
	// (the execution stage's verdict goes with the member's status, in one write).
	for _, m := range f.Members {
		var w workv1alpha1.Work
		fedtest.Eventually(t, 60*time.Second, m.Name()+" Work status", func() error {
			if err := host.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.Work(rb.Name, m.Name())}, &w); err != nil {
				return err
			}
			if c := meta.FindStatusCondition(w.Status.Conditions, workv1alpha1.WorkApplied); c == nil || c.Status != metav1.ConditionTrue {
				return fmt.Errorf("applied: %+v", c)
			}
			if len(w.Status.ManifestStatuses) != 1 {
				return fmt.Errorf("manifestStatuses %+v", w.Status.ManifestStatuses)
			}
			ms := w.Status.ManifestStatuses[0]
			want := workv1alpha1.ResourceIdentifier{Ordinal: 0, Group: "apps", Version: "v1", Kind: "Deployment",
				Resource: "deployments", Namespace: ns, Name: "web"}
			if ms.Identifier != want {
				return fmt.Errorf("identifier %+v", ms.Identifier)
			}
			if n := readyReplicas(ms.Status); n != 2 || ms.Health != workv1alpha1.ResourceHealthy {
				return fmt.Errorf("readyReplicas %d health %s", n, ms.Health)
			}
			return nil
		})
		for _, mf := range w.ManagedFields {
			if mf.Subresource == "status" && mf.Manager != names.StatusFieldManager {
				t.Errorf("Work %s: status written by %s too", w.Name, mf.Manager)
			}
		}
	}

	// The binding: one item per member; the template: the sum.
	fedtest.Eventually(t, 20*time.Second, "binding aggregatedStatus and template status", func() error {
		if err := itemsAre(ctx, host, rb, map[string]workv1alpha1.ResourceHealth{"member1": workv1alpha1.ResourceHealthy, "member2": workv1alpha1.ResourceHealthy}, 2); err != nil {
			return err
		}
		return templateReady(ctx, host, 4)
	})

	// The members' objects are held without their managed fields (which the API server sets on every object).
	held := 0
	works.watches.mu.Lock()
	for _, cw := range works.watches.clusters {
		for _, inf := range cw.informers {
			for _, o := range inf.GetStore().List() {
				held++
				if u, ok := o.(*unstructured.Unstructured); !ok || len(u.GetManagedFields()) > 0 {
					t.Errorf("member object %T %s held with its managed fields", o, cache.MetaObjectToName(u))
				}
			}
		}
	}
	works.watches.mu.Unlock()
	if held == 0 {
		t.Error("no member objects held")
	}

	// member2 goes away: its API server stops and (as the cluster controller would) its Cluster turns not Ready.
	f.Member("member2").StopAPIServer()
	setReady(t, host, "member2", metav1.ConditionFalse)
	fedtest.Eventually(t, 20*time.Second, "member2 Unknown, template counts member1 only", func() error {
		if err := itemsAre(ctx, host, rb, map[string]workv1alpha1.ResourceHealth{"member1": workv1alpha1.ResourceHealthy, "member2": workv1alpha1.ResourceUnknown}, 2); err != nil {
			return err
		}
		var w workv1alpha1.Work
		if err := host.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.Work(rb.Name, "member2")}, &w); err != nil {
			return err
		}
		if len(w.Status.ManifestStatuses) != 1 || w.Status.ManifestStatuses[0].Health != workv1alpha1.ResourceUnknown || w.Status.ManifestStatuses[0].Status != nil {
			return fmt.Errorf("member2 Work still reports %+v", w.Status.ManifestStatuses)
		}
		return templateReady(ctx, host, 2)
	})

	// A not-Ready member is not watched. A deleted Cluster's watches stop, the client made for it (shared with the
	// execution stage) is dropped, and its Work no longer reports what the member showed last, as though it were
	// there.
	if w := works.watches.watching(); slices.Contains(w, "member2") || !slices.Contains(w, "member1") {
		t.Errorf("watching %v, want member1 only", w)
	}
	if err := host.Delete(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"}}); err != nil {
		t.Fatal(err)
	}
	fedtest.Eventually(t, 10*time.Second, "member1 watches stopped, its client dropped, its Work Unknown", func() error {
		var errs []error
		if w := works.watches.watching(); len(w) != 0 {
			errs = append(errs, fmt.Errorf("watching %v", w))
		}
		if !members.forgot("member1") {
			errs = append(errs, errors.New("member1's client is still held"))
		}
		var w workv1alpha1.Work
		if err := host.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.Work(rb.Name, "member1")}, &w); err != nil {
			return err
		}
		if len(w.Status.ManifestStatuses) != 1 || w.Status.ManifestStatuses[0].Health != workv1alpha1.ResourceUnknown || w.Status.ManifestStatuses[0].Status != nil {
			errs = append(errs, fmt.Errorf("member1's Work still reports %+v", w.Status.ManifestStatuses))
		}
		return errors.Join(errs...)
	})
}

// forgetting is a member client factory that records which clusters' clients were dropped.
type forgetting struct {
	*member.Factory
	mu      sync.Mutex
	dropped []string
}

func (f *forgetting) Forget(name string) {
	f.mu.Lock()
	f.dropped = append(f.dropped, name)
	f.mu.Unlock()
	f.Factory.Forget(name)
}

func (f *forgetting) forgot(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Contains(f.dropped, name)
}

// bindToMembers creates the template name (4 replicas), its binding dividing it over member1 and member2, and
// their Works (not applied yet), as the earlier stages would.
func bindToMembers(t *testing.T, f *fedtest.Federation, name string) *workv1alpha1.ResourceBinding {
	t.Helper()
	ctx := context.Background()
	tpl := fedtest.Deployment(ns, "web", 4)
	tpl.Name = name
	if err := f.Host.Create(ctx, tpl); err != nil {
		t.Fatal(err)
	}
	rb := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names.Binding("Deployment", name)},
		Spec: workv1alpha1.ResourceBindingSpec{
			Resource: workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: name, UID: tpl.UID},
			Clusters: []workv1alpha1.TargetCluster{{Name: "member1", Replicas: 2}, {Name: "member2", Replicas: 2}},
		},
	}
	if err := f.Host.Create(ctx, rb); err != nil {
		t.Fatal(err)
	}
	for _, m := range f.Members {
		if err := f.Host.Create(ctx, work(t, rb.Name, m.Name(), fedtest.Deployment(ns, "web", 2))); err != nil {
			t.Fatal(err)
		}
	}
	return rb
}

func itemsAre(ctx context.Context, host client.Client, rb *workv1alpha1.ResourceBinding, health map[string]workv1alpha1.ResourceHealth, ready int64) error {
	var cur workv1alpha1.ResourceBinding
	if err := host.Get(ctx, client.ObjectKeyFromObject(rb), &cur); err != nil {
		return err
	}
	items := cur.Status.AggregatedStatus
	if len(items) != len(health) {
		return fmt.Errorf("aggregatedStatus %+v", items)
	}
	for _, it := range items {
		if !it.Applied || it.Health != health[it.ClusterName] {
			return fmt.Errorf("item %s: applied %v health %s (%s)", it.ClusterName, it.Applied, it.Health, it.AppliedMessage)
		}
		if it.Health == workv1alpha1.ResourceUnknown {
			if it.Status != nil {
				return fmt.Errorf("item %s is not Ready but reports status %s", it.ClusterName, it.Status.Raw)
			}
		} else if n := readyReplicas(it.Status); n != ready {
			return fmt.Errorf("item %s readyReplicas %d", it.ClusterName, n)
		}
	}
	return nil
}

func templateReady(ctx context.Context, host client.Client, want int32) error {
	var d appsv1.Deployment
	if err := host.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &d); err != nil {
		return err
	}
	if d.Status.ReadyReplicas != want {
		return fmt.Errorf("template readyReplicas %d, want %d", d.Status.ReadyReplicas, want)
	}
	return nil
}

func readyReplicas(raw *runtime.RawExtension) int64 {
	if raw == nil {
		return -1
	}
	var s struct {
		ReadyReplicas int64 `json:"readyReplicas"`
	}
	if err := json.Unmarshal(raw.Raw, &s); err != nil {
		return -1
	}
	return s.ReadyReplicas
}

func setReady(t *testing.T, host client.Client, cluster string, status metav1.ConditionStatus) {
	t.Helper()
	var c clusterv1alpha1.Cluster
	if err := host.Get(context.Background(), client.ObjectKey{Name: cluster}, &c); err != nil {
		t.Fatal(err)
	}
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: clusterv1alpha1.ClusterConditionReady, Status: status, Reason: "Test", Message: "set by the test"})
	if err := host.Status().Update(context.Background(), &c); err != nil {
		t.Fatal(err)
	}
}

func work(t *testing.T, binding, cluster string, obj runtime.Object) *workv1alpha1.Work {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &workv1alpha1.Work{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names.Work(binding, cluster),
			Labels: map[string]string{names.ClusterLabel: cluster, names.BindingLabel: binding}},
		Spec: workv1alpha1.WorkSpec{ClusterName: cluster,
			Workload: workv1alpha1.WorkloadTemplate{Manifests: []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}}},
	}
}
