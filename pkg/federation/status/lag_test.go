package status

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
	"github.com/fedmesh/fedmesh/pkg/federation/rendering"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// laggingCache serves, while stale is set, the copy of an object held there instead of the API server's: a cache
// that has not seen the stage's last writes yet.
type laggingCache struct {
	client.Client
	stale map[string]client.Object // by name
}

func (c *laggingCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if o, ok := c.stale[key.Name]; ok && fmt.Sprintf("%T", o) == fmt.Sprintf("%T", obj) {
		switch dst := obj.(type) {
		case *workv1alpha1.ResourceBinding:
			o.(*workv1alpha1.ResourceBinding).DeepCopyInto(dst)
		case *unstructured.Unstructured:
			o.(*unstructured.Unstructured).DeepCopyInto(dst)
		}
		return nil
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// TestStaleCacheDoesNotHideAReturn: a member goes A, B, A; the pass for the second A reads copies of the Work,
// the binding and the template from before B was written (a lagging cache), which say A. Each is written A again
// rather than left at B.
func TestStaleCacheDoesNotHideAReturn(t *testing.T) {
	f := fedtest.Start(t, fedtest.Options{Members: 1})
	ctx := context.Background()
	host := f.Host
	if err := host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	tpl := fedtest.Deployment(ns, "web", 2)
	if err := host.Create(ctx, tpl); err != nil {
		t.Fatal(err)
	}
	rb := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-deployment"},
		Spec: workv1alpha1.ResourceBindingSpec{
			Resource: workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: "web", UID: tpl.UID},
			Clusters: []workv1alpha1.TargetCluster{{Name: "member1", Replicas: 2}},
		},
	}
	if err := host.Create(ctx, rb); err != nil {
		t.Fatal(err)
	}
	w := work(t, rb.Name, "member1", fedtest.Deployment(ns, "web", 2))
	if err := host.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	works := &WorkReconciler{Client: host, Verdicts: appliedVerdicts{}}
	// The manager's client reads bindings from its cache and templates from the API server; Templates is the
	// detector's cache.
	cache, templates := &laggingCache{Client: host}, &laggingCache{Client: host}
	chain := interpreter.Layers{Native: native.New()}.Chain()
	bindings := &BindingReconciler{Client: cache, Templates: templates, Aggregator: chain, Renderings: &rendering.Store{},
		Discovery: discovery.NewDiscoveryClientForConfigOrDie(f.Federation.Host.Config())}
	statuses := func(ready int) []workv1alpha1.ManifestStatus {
		return []workv1alpha1.ManifestStatus{{Identifier: workv1alpha1.ResourceIdentifier{Ordinal: 0, Group: "apps", Version: "v1",
			Kind: "Deployment", Resource: "deployments", Namespace: ns, Name: "web"},
			Status: raw(fmt.Sprintf(`{"replicas":2,"readyReplicas":%d}`, ready)), Health: workv1alpha1.ResourceHealthy}}
	}
	get := func(obj client.Object) client.Object {
		t.Helper()
		if err := host.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Fatal(err)
		}
		return obj
	}
	template := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("apps/v1")
		u.SetKind("Deployment")
		u.SetNamespace(ns)
		u.SetName("web")
		return get(u).(*unstructured.Unstructured)
	}
	pass := func(ready int, cached *workv1alpha1.Work) {
		t.Helper()
		if err := works.write(ctx, cached, statuses(ready), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := bindings.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(rb)}); err != nil {
			t.Fatal(err)
		}
	}

	pass(1, get(&workv1alpha1.Work{ObjectMeta: w.ObjectMeta}).(*workv1alpha1.Work)) // A
	staleWork := get(&workv1alpha1.Work{ObjectMeta: w.ObjectMeta}).(*workv1alpha1.Work)
	staleRB, staleTemplate := get(&workv1alpha1.ResourceBinding{ObjectMeta: rb.ObjectMeta}), template()
	pass(2, staleWork) // B, read from up-to-date caches
	cache.stale = map[string]client.Object{rb.Name: staleRB}
	templates.stale = map[string]client.Object{"web": staleTemplate}
	pass(1, staleWork) // A again, read from copies of before B

	var gotWork workv1alpha1.Work
	if err := host.Get(ctx, client.ObjectKeyFromObject(w), &gotWork); err != nil {
		t.Fatal(err)
	}
	if n := readyReplicas(gotWork.Status.ManifestStatuses[0].Status); n != 1 {
		t.Errorf("Work readyReplicas %d, want 1", n)
	}
	gotRB := get(&workv1alpha1.ResourceBinding{ObjectMeta: rb.ObjectMeta}).(*workv1alpha1.ResourceBinding)
	if items := gotRB.Status.AggregatedStatus; len(items) != 1 || readyReplicas(items[0].Status) != 1 {
		t.Errorf("binding aggregatedStatus %+v, want readyReplicas 1", items)
	}
	if n, _, _ := unstructured.NestedInt64(template().Object, "status", "readyReplicas"); n != 1 {
		t.Errorf("template readyReplicas %d, want 1", n)
	}
}
