package execution

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/applystatus"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
	"github.com/fedmesh/fedmesh/pkg/federation/member"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/verdicts"
	"github.com/fedmesh/fedmesh/test/cluster"
	"github.com/fedmesh/fedmesh/test/fedtest"
	"github.com/fedmesh/fedmesh/test/promtest"
)

// TestReconcileUnchanged reconciles one Work again and again, each time with a new Reconciler and member client as
// a restarted federator would, and counts the member's write requests from its own metrics: a Work whose member
// objects are as desired costs reads only, even when the member owns some fields (retained replicas, its own
// labels); drift in what the federation sets is corrected; and a new generation of the Work is applied even when
// the member already holds all of it, so that what it dropped is pruned.
func TestReconcileUnchanged(t *testing.T) {
	f := fedtest.Start(t, fedtest.Options{Members: 1})
	ctx := context.Background()
	host := f.Host
	mem := f.Members[0].Clientset()
	cluster := f.Members[0].Name()
	if err := host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// No manager runs: every reconcile is one of these calls, so nothing else writes to the member in between.
	// Each is a controller started afresh (its verdicts too), and writes its verdict as the work-status stage
	// would.
	reconcile := func(t *testing.T, w *workv1alpha1.Work) {
		t.Helper()
		applied := &verdicts.Store{Type: workv1alpha1.WorkApplied}
		r := &Reconciler{
			Client:          host,
			Members:         &member.Factory{Host: host},
			Retainer:        interpreter.Layers{Native: native.New()}.Chain(),
			Verdicts:        applied,
			Recorder:        record.NewFakeRecorder(100),
			Timeout:         10 * time.Second,
			ConflictRecheck: time.Minute,
		}
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)}); err != nil {
			t.Fatalf("reconcile: %v", err)
		}
		var cur workv1alpha1.Work
		if err := host.Get(ctx, client.ObjectKeyFromObject(w), &cur); err != nil {
			t.Fatal(err)
		}
		verdict := applied.Current(&cur, cur.Status.Conditions)
		if verdict == nil {
			t.Fatal("the reconcile gave no verdict")
		}
		if c, changed := applystatus.Condition(cur.Status.Conditions, *verdict); changed {
			if err := applystatus.Apply(ctx, host, &cur, names.StatusFieldManager, &workv1alpha1.WorkStatus{Conditions: []metav1.Condition{c}}); err != nil {
				t.Fatal(err)
			}
		}
		waitApplied(t, host, w, metav1.ConditionTrue, ReasonApplied)
	}
	// reconcileWrites reconciles w and returns the writes it made to the member, and whether w changed in the host.
	reconcileWrites := func(t *testing.T, w *workv1alpha1.Work) (map[string]int, bool) {
		t.Helper()
		before, rv := memberWrites(t, mem), workVersion(t, host, w)
		reconcile(t, w)
		return writesSince(before, memberWrites(t, mem)), workVersion(t, host, w) != rv
	}
	// appliedOnceThenNothing checks that w's first reconcile applies its Deployment and the next writes nothing.
	appliedOnceThenNothing := func(t *testing.T, w *workv1alpha1.Work) {
		t.Helper()
		if writes, _ := reconcileWrites(t, w); writes["APPLY deployments"] != 1 {
			t.Fatalf("member writes %v, want the Deployment applied", writes)
		}
		if writes, workChanged := reconcileWrites(t, w); len(writes) != 0 || workChanged {
			t.Errorf("member writes %v, Work changed %v; want none", writes, workChanged)
		}
	}

	web := fedtest.Deployment(ns, "web", 2)
	web.Labels["tier"] = "frontend"
	web.Labels[interpreter.RetainReplicasLabel] = "true"
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "web-config"}, Data: map[string]string{"a": "1"}}
	w := work("web-deployment-"+cluster, cluster, "", web, cm)
	if err := host.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	writes, _ := reconcileWrites(t, w)
	// The count sees fedmesh's applies: without this a broken count would pass every test below.
	if writes["APPLY deployments"] != 1 || writes["APPLY configmaps"] != 1 {
		t.Fatalf("first reconcile made writes %v, want one apply of each object", writes)
	}

	t.Run("a restarted controller writes nothing", func(t *testing.T) {
		d := getDeployment(t, mem, "web")
		skipped, applied := outcomes()
		writes, workChanged := reconcileWrites(t, w)
		if len(writes) != 0 || workChanged {
			t.Errorf("member writes %v, Work changed %v; want none", writes, workChanged)
		}
		if s, a := outcomes(); s-skipped != 2 || a != applied {
			t.Errorf("manifests skipped %v applied %v, want 2 and 0", s-skipped, a-applied)
		}
		if after := getDeployment(t, mem, "web"); after.ResourceVersion != d.ResourceVersion {
			t.Errorf("member object written: resourceVersion %s -> %s", d.ResourceVersion, after.ResourceVersion)
		}
	})

	t.Run("member-owned fields cause no apply", func(t *testing.T) {
		d := getDeployment(t, mem, "web")
		d.Spec.Replicas = ptr.To[int32](5)
		d.Labels["member.example/team"] = "blue"
		if _, err := mem.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{FieldManager: "member-hpa"}); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if writes, workChanged := reconcileWrites(t, w); len(writes) != 0 || workChanged {
				t.Errorf("member writes %v, Work changed %v; want none", writes, workChanged)
			}
		}
		if d := getDeployment(t, mem, "web"); *d.Spec.Replicas != 5 || d.Labels["member.example/team"] != "blue" {
			t.Errorf("member fields lost: replicas %d labels %v", *d.Spec.Replicas, d.Labels)
		}
	})

	t.Run("drift in federation fields is corrected", func(t *testing.T) {
		d := getDeployment(t, mem, "web")
		d.Labels["tier"] = "changed"
		d.Spec.Template.Spec.Containers[0].Image = "registry.example/app:evil"
		if _, err := mem.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{FieldManager: "intruder"}); err != nil {
			t.Fatal(err)
		}
		if err := mem.CoreV1().ConfigMaps(ns).Delete(ctx, "web-config", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		writes, _ := reconcileWrites(t, w)
		if want := map[string]int{"APPLY deployments": 1, "APPLY configmaps": 1}; fmt.Sprint(writes) != fmt.Sprint(want) {
			t.Errorf("member writes %v, want %v", writes, want)
		}
		d = getDeployment(t, mem, "web")
		if d.Labels["tier"] != "frontend" || d.Spec.Template.Spec.Containers[0].Image != "registry.example/app:1" {
			t.Errorf("drift not corrected: labels %v image %s", d.Labels, d.Spec.Template.Spec.Containers[0].Image)
		}
		if *d.Spec.Replicas != 5 || d.Labels["member.example/team"] != "blue" {
			t.Errorf("member fields lost: replicas %d labels %v", *d.Spec.Replicas, d.Labels)
		}
		if _, err := mem.CoreV1().ConfigMaps(ns).Get(ctx, "web-config", metav1.GetOptions{}); err != nil {
			t.Errorf("deleted config map not restored: %v", err)
		}
		if writes, _ := reconcileWrites(t, w); len(writes) != 0 {
			t.Errorf("member writes %v after the correction, want none", writes)
		}
	})

	t.Run("a new generation is applied although the member holds it", func(t *testing.T) {
		// The member holds every field of the new manifests (they only drop the tier label); only an apply prunes it.
		delete(web.Labels, "tier")
		updateManifests(t, host, w, web, cm)
		writes, _ := reconcileWrites(t, w)
		if want := map[string]int{"APPLY deployments": 1, "APPLY configmaps": 1}; fmt.Sprint(writes) != fmt.Sprint(want) {
			t.Errorf("member writes %v, want %v", writes, want)
		}
		if d := getDeployment(t, mem, "web"); d.Labels["tier"] != "" {
			t.Errorf("label dropped from the Work still in the member: %v", d.Labels)
		}
		if writes, workChanged := reconcileWrites(t, w); len(writes) != 0 || workChanged {
			t.Errorf("member writes %v, Work changed %v after the new generation was applied; want none", writes, workChanged)
		}
	})

	t.Run("a manifest rendered from a host template, with the host's defaults", func(t *testing.T) {
		// As the binding controller renders it: the template read back from the host, defaults and normalized
		// quantities included (0.1 CPU is stored as 100m), server fields dropped by decodeManifest.
		api := fedtest.Deployment(ns, "api", 3)
		api.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.1")}
		if err := host.Create(ctx, api); err != nil {
			t.Fatal(err)
		}
		tpl := &unstructured.Unstructured{}
		tpl.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Deployment"))
		if err := host.Get(ctx, client.ObjectKeyFromObject(api), tpl); err != nil {
			t.Fatal(err)
		}
		w := work("api-deployment-"+cluster, cluster, "", tpl)
		if err := host.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		appliedOnceThenNothing(t, w)
	})

	t.Run("a Work whose name is too long for a label", func(t *testing.T) {
		// Its identity is a shortened label and an annotation with the whole name: neither may look like drift.
		w := work("checkout-frontend-canary-v2-deployment-member-eu-west-1-production", cluster, "", fedtest.Deployment(ns, "checkout", 1))
		if err := host.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		appliedOnceThenNothing(t, w)
	})
}

// outcomes reads the controller's count of manifests skipped and applied, as the federator's /metrics serves it.
func outcomes() (skipped, applied float64) {
	skipped, _, _ = promtest.Sum(metrics.Registry, "fedmesh_federation_execution_manifests_total", map[string]string{"outcome": "skipped"})
	applied, _, _ = promtest.Sum(metrics.Registry, "fedmesh_federation_execution_manifests_total", map[string]string{"outcome": "applied"})
	return skipped, applied
}

func getDeployment(t *testing.T, mem kubernetes.Interface, name string) *appsv1.Deployment {
	t.Helper()
	d, err := mem.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func workVersion(t *testing.T, host client.Client, w *workv1alpha1.Work) string {
	t.Helper()
	var cur workv1alpha1.Work
	if err := host.Get(context.Background(), client.ObjectKeyFromObject(w), &cur); err != nil {
		t.Fatal(err)
	}
	return cur.ResourceVersion
}

// memberWrites counts the write requests the member's API server has served for the objects a Work holds
// ("APPLY deployments": n), from its request metrics. A request is counted just after its answer is sent, so the
// count is read until it holds still.
func memberWrites(t *testing.T, mem kubernetes.Interface) map[string]int {
	t.Helper()
	read := func() map[string]int {
		counts, err := cluster.Requests(context.Background(), mem)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		for key, n := range counts {
			verb, res, _ := strings.Cut(key, " ")
			res, _, _ = strings.Cut(res, " ") // failed requests count too: "APPLY deployments (409)"
			if verb == "GET" || verb == "WATCHLIST" || (res != "deployments" && res != "configmaps" && res != "namespaces") {
				continue // reads, subresources and other resources
			}
			out[verb+" "+res] += int(n)
		}
		return out
	}
	prev := read()
	for range 20 {
		time.Sleep(100 * time.Millisecond)
		cur := read()
		if fmt.Sprint(cur) == fmt.Sprint(prev) {
			return cur
		}
		prev = cur
	}
	t.Fatalf("member write count does not settle: %v", prev)
	return nil
}

// writesSince is after minus before, without the counts that did not change.
func writesSince(before, after map[string]int) map[string]int {
	out := map[string]int{}
	for k, n := range after {
		if d := n - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}
