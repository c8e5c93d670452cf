package binding

import (
	"context"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
)

// TestDependents: a dependency changing finds the bindings whose last pass looked it up, by name or by selector,
// and no other; a binding's later pass replaces what it recorded, and a binding forgotten is found no more.
func TestDependents(t *testing.T) {
	cm := schema.GroupKind{Kind: "ConfigMap"}
	secret := schema.GroupKind{Kind: "Secret"}
	named := func(gk schema.GroupKind, ns, name string) depName {
		return depName{depSpace: depSpace{GroupKind: gk, Namespace: ns}, Name: name}
	}
	selecting := func(gk schema.GroupKind, ns, sel string) depSelector {
		s, err := labels.Parse(sel)
		if err != nil {
			t.Fatal(err)
		}
		return depSelector{depSpace: depSpace{GroupKind: gk, Namespace: ns}, Selector: s}
	}
	web, api, jobs := types.NamespacedName{Namespace: "a", Name: "web"}, types.NamespacedName{Namespace: "a", Name: "api"}, types.NamespacedName{Namespace: "b", Name: "jobs"}
	var d dependents
	d.set(web, dependencyRefs{names: []depName{named(cm, "a", "conf"), named(secret, "a", "creds")}})
	d.set(api, dependencyRefs{names: []depName{named(cm, "a", "conf")}, selectors: []depSelector{selecting(cm, "a", "tier=api")}})
	d.set(jobs, dependencyRefs{names: []depName{named(cm, "b", "conf")}})

	obj := func(ns, name string, lbls map[string]string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls}}
	}
	check := func(step string, gk schema.GroupKind, o *metav1.PartialObjectMetadata, want ...types.NamespacedName) {
		t.Helper()
		found := map[types.NamespacedName]struct{}{}
		d.of(gk, o, found)
		var got []string
		for b := range found {
			got = append(got, b.String())
		}
		var w []string
		for _, b := range want {
			w = append(w, b.String())
		}
		slices.Sort(got)
		slices.Sort(w)
		if !slices.Equal(got, w) {
			t.Errorf("%s: %s %s/%s: bindings %v, want %v", step, gk.Kind, o.Namespace, o.Name, got, w)
		}
	}
	check("by name", cm, obj("a", "conf", nil), api, web)
	check("by name, another namespace", cm, obj("b", "conf", nil), jobs)
	check("by kind", secret, obj("a", "creds", nil), web)
	check("same name, another kind", secret, obj("a", "conf", nil))
	check("by selector", cm, obj("a", "extra", map[string]string{"tier": "api"}), api)
	check("selector of another namespace", cm, obj("b", "extra", map[string]string{"tier": "api"}))
	check("unknown", cm, obj("a", "other", nil))

	d.set(web, dependencyRefs{names: []depName{named(cm, "a", "conf2")}})
	check("replaced", cm, obj("a", "conf", nil), api)
	check("replaced", secret, obj("a", "creds", nil))
	check("replaced", cm, obj("a", "conf2", nil), web)

	d.forget(api)
	d.forget(jobs)
	d.set(web, dependencyRefs{})
	check("forgotten", cm, obj("a", "conf", map[string]string{"tier": "api"}))
	if len(d.recorded)+len(d.byName)+len(d.bySelector) != 0 {
		t.Errorf("left behind: %v %v %v", d.recorded, d.byName, d.bySelector)
	}
}

// TestDependencyMayBeSelected: an override policy selecting a dependency a binding's last pass looked up (and
// rendered into its Works) may change those Works, so it brings the binding back; one selecting none does not.
func TestDependencyMayBeSelected(t *testing.T) {
	cm := depSpace{GroupKind: schema.GroupKind{Kind: "ConfigMap"}, Namespace: "demo"}
	tier, _ := labels.Parse("tier=web")
	refs := dependencyRefs{
		names:     []depName{{depSpace: cm, Name: "conf"}},
		selectors: []depSelector{{depSpace: depSpace{GroupKind: schema.GroupKind{Kind: "Secret"}, Namespace: "demo"}, Selector: tier}},
	}
	sel := func(apiVersion, kind, ns, name string) []policyv1alpha1.ResourceSelector {
		return []policyv1alpha1.ResourceSelector{{APIVersion: apiVersion, Kind: kind, Namespace: ns, Name: name}}
	}
	for _, tc := range []struct {
		name      string
		selectors []policyv1alpha1.ResourceSelector
		policyNS  string
		refs      dependencyRefs
		want      bool
	}{
		{name: "by name", selectors: sel("v1", "ConfigMap", "", "conf"), policyNS: "demo", refs: refs, want: true},
		{name: "by kind", selectors: sel("v1", "ConfigMap", "", ""), policyNS: "demo", refs: refs, want: true},
		{name: "another name", selectors: sel("v1", "ConfigMap", "", "other"), policyNS: "demo", refs: refs},
		{name: "another kind", selectors: sel("v1", "ServiceAccount", "", ""), policyNS: "demo", refs: refs},
		{name: "another group", selectors: sel("example.com/v1", "ConfigMap", "", "conf"), policyNS: "demo", refs: refs},
		{name: "a policy of another namespace", selectors: sel("v1", "ConfigMap", "", "conf"), policyNS: "prod", refs: refs},
		{name: "cluster policy, any namespace", selectors: sel("v1", "ConfigMap", "", "conf"), refs: refs, want: true},
		{name: "cluster policy, another namespace", selectors: sel("v1", "ConfigMap", "prod", "conf"), refs: refs},
		{name: "found by selector: any name may be", selectors: sel("v1", "Secret", "", "creds"), policyNS: "demo", refs: refs, want: true},
		{name: "no selectors select every dependency", policyNS: "demo", refs: refs, want: true},
		{name: "no dependencies", selectors: sel("v1", "ConfigMap", "", ""), policyNS: "demo"},
		{name: "no selectors, no dependencies", policyNS: "demo"},
	} {
		if got := dependencyMayBeSelected(tc.selectors, tc.policyNS, tc.refs); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestDependentsEvents: a dependency's creation, change (labels included: the bindings that selected it before
// too) and deletion enqueue its bindings; the informer's initial list and resyncs do not.
func TestDependentsEvents(t *testing.T) {
	cm := schema.GroupKind{Kind: "ConfigMap"}
	sel, _ := labels.Parse("tier=api")
	web, api := types.NamespacedName{Namespace: "a", Name: "web"}, types.NamespacedName{Namespace: "a", Name: "api"}
	var d dependents
	d.set(web, dependencyRefs{names: []depName{{depSpace: depSpace{GroupKind: cm, Namespace: "a"}, Name: "conf"}}})
	d.set(api, dependencyRefs{selectors: []depSelector{{depSpace: depSpace{GroupKind: cm, Namespace: "a"}, Selector: sel}}})
	h := d.eventHandler(cm, 0)
	obj := func(rv string, lbls map[string]string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "conf", ResourceVersion: rv, Labels: lbls}}
	}
	api1 := map[string]string{"tier": "api"}
	for _, tc := range []struct {
		name string
		fire func(context.Context, workqueue.TypedRateLimitingInterface[reconcile.Request])
		want []types.NamespacedName
	}{
		{"created", func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Create(ctx, event.CreateEvent{Object: obj("1", nil)}, q)
		}, []types.NamespacedName{web}},
		{"initial list", func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Create(ctx, event.CreateEvent{Object: obj("1", api1), IsInInitialList: true}, q)
		}, nil},
		{"resync", func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(ctx, event.UpdateEvent{ObjectOld: obj("1", api1), ObjectNew: obj("1", api1)}, q)
		}, nil},
		{"labels taken away", func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(ctx, event.UpdateEvent{ObjectOld: obj("1", api1), ObjectNew: obj("2", nil)}, q)
		}, []types.NamespacedName{api, web}},
		{"deleted", func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Delete(ctx, event.DeleteEvent{Object: obj("2", api1)}, q)
		}, []types.NamespacedName{api, web}},
	} {
		q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
		tc.fire(context.Background(), q)
		var got []string
		for q.Len() > 0 {
			req, _ := q.Get()
			got = append(got, req.String())
			q.Done(req)
		}
		var want []string
		for _, b := range tc.want {
			want = append(want, b.String())
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: enqueued %v, want %v", tc.name, got, want)
		}
		q.ShutDown()
	}
}

// readingAfterRecord is a Templates reader that checks, as each dependency is read, that its binding is recorded
// as its dependent already: a dependency changing while the pass reads it must still bring the binding back.
type readingAfterRecord struct {
	client.Reader
	t       *testing.T
	d       *dependents
	binding types.NamespacedName
}

func (r readingAfterRecord) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	found := map[types.NamespacedName]struct{}{}
	gk := obj.GetObjectKind().GroupVersionKind().GroupKind()
	r.d.of(gk, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}, found)
	if _, ok := found[r.binding]; !ok {
		r.t.Errorf("%s %s read before the binding was recorded as its dependent", gk.Kind, key)
	}
	return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, key.Name)
}

func TestDependenciesRecordedBeforeRead(t *testing.T) {
	deploy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"namespace": "demo", "name": "web"},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{
			"name": "web", "image": "nginx",
			"envFrom": []any{map[string]any{"configMapRef": map[string]any{"name": "late-conf"}}}}}}}},
	}}
	b := types.NamespacedName{Namespace: "demo", Name: "web-deployment"}
	r := &Reconciler{Interpreter: interpreter.Layers{Native: native.New()}.Chain()}
	r.Templates = readingAfterRecord{t: t, d: &r.dependents, binding: b}
	_, missing, err := r.dependencies(context.Background(), b, deploy)
	if err != nil || len(missing) != 1 {
		t.Fatalf("missing %v, %v; want the ConfigMap missing", missing, err)
	}
}
