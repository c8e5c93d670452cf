package detector

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/templates"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// TestWaitingTemplates: a template waits for one policy at a time, and is held no longer than it waits; its wait
// is news when it waits for another policy or for other overrides, not when noted again as it was (after a take
// too).
func TestWaitingTemplates(t *testing.T) {
	key := func(name string) templates.Key {
		return templates.Key{GVK: deploymentKind, NamespacedName: types.NamespacedName{Namespace: "m", Name: name}}
	}
	top, other := types.NamespacedName{Namespace: "m", Name: "top"}, types.NamespacedName{Name: "catch-all"}
	var w waitingTemplates
	w.wait(top, key("shop"), []string{"o1"})
	w.wait(top, key("cart"), []string{"o1"})
	w.wait(other, key("cart"), []string{"o2"}) // now waits for the other policy only
	if got := w.take(top); !slices.Equal(got, []templates.Key{key("shop")}) {
		t.Errorf("waiting for %s: %v, want shop only", top, got)
	}
	if got := w.take(top); len(got) != 0 {
		t.Errorf("taken twice: %v", got)
	}
	w.wait(top, key("shop"), []string{"o1"})
	w.forget(key("shop"))
	w.forget(key("cart"))
	if n := w.count(); n != 0 || len(w.byPolicy) != 0 {
		t.Errorf("%d templates (%d policies) still noted after each was forgotten", n, len(w.byPolicy))
	}

	for i, step := range []struct {
		what     string
		policy   types.NamespacedName
		missing  []string
		take     bool // the policy's change takes the template first
		wantNews bool
	}{
		{what: "first wait", policy: top, missing: []string{"o1", "o2"}, wantNews: true},
		{what: "noted again, the same", policy: top, missing: []string{"o1", "o2"}},
		{what: "the same in another order", policy: top, missing: []string{"o2", "o1"}},
		{what: "taken by a change of the policy, the same", policy: top, missing: []string{"o1", "o2"}, take: true},
		{what: "one override made", policy: top, missing: []string{"o2"}, wantNews: true},
		{what: "another policy, the same override", policy: other, missing: []string{"o2"}, wantNews: true},
	} {
		if step.take {
			w.take(step.policy)
		}
		if news := w.wait(step.policy, key("shop"), step.missing); news != step.wantNews {
			t.Errorf("step %d, %s: news %t, want %t", i, step.what, news, step.wantNews)
		}
	}
	w.forget(key("shop"))
	if news := w.wait(other, key("shop"), []string{"o2"}); !news {
		t.Error("a wait after the template was forgotten is not news")
	}
}

// TestTemplateWaitingForAPolicyThatGoes: template shop is claimed by a policy that is gone, and waits for the
// top-ranked policy, whose dependentOverrides do not exist yet, keeping its claim and binding. When that policy is
// deleted, or stops selecting shop, shop is looked at again (though the policy neither selects nor claims it):
// released when no policy is left, claimed by a policy ranked lower when one is.
func TestTemplateWaitingForAPolicyThatGoes(t *testing.T) {
	shopKey := templates.Key{GVK: deploymentKind, NamespacedName: types.NamespacedName{Namespace: "m", Name: "shop"}}
	for _, tc := range []struct {
		name     string
		change   func(ctx context.Context, c client.Client, top *policyv1alpha1.PropagationPolicy) error
		catchAll bool
		// wantClaim is the claim label shop ends with, its value, and the binding's; none when released.
		wantClaim map[string]string
	}{
		{"the policy deleted: released", func(ctx context.Context, c client.Client, top *policyv1alpha1.PropagationPolicy) error {
			return c.Delete(ctx, top)
		}, false, nil},
		{"the policy stops selecting it: released", func(ctx context.Context, c client.Client, top *policyv1alpha1.PropagationPolicy) error {
			top.Spec.ResourceSelectors = byName("other")
			return c.Update(ctx, top)
		}, false, nil},
		{"the policy deleted: claimed by the policy ranked below", func(ctx context.Context, c client.Client, top *policyv1alpha1.PropagationPolicy) error {
			return c.Delete(ctx, top)
		}, true, map[string]string{names.ClusterPropagationPolicyLabel: "catch-all"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r, c, dyn := waitingHarness(ctx, t, tc.catchAll)
			top := &policyv1alpha1.PropagationPolicy{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: "m", Name: "new"}, top); err != nil {
				t.Fatal(err)
			}
			reconcileTemplate := func() reconcile.Result {
				t.Helper()
				res, err := r.reconcileTemplate(ctx, shopKey)
				if err != nil {
					t.Fatalf("reconciling shop: %v", err)
				}
				return res
			}

			if res := reconcileTemplate(); res.RequeueAfter != holderLostRecheck {
				t.Errorf("shop, its holder gone, is looked at again after %s, want %s", res.RequeueAfter, holderLostRecheck)
			}
			claimIs(ctx, t, c, dyn, map[string]string{names.PropagationPolicyLabel: "old"})

			r.queue.pending = nil
			if err := tc.change(ctx, c, top); err != nil {
				t.Fatal(err)
			}
			if _, err := r.reconcilePolicy(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(top)}); err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(r.queue.pending, shopKey) {
				t.Fatalf("the change of m/new queued %v, not shop, which waited for it", r.queue.pending)
			}
			reconcileTemplate()
			claimIs(ctx, t, c, dyn, tc.wantClaim)
			if n := r.waiting.count(); n != 0 {
				t.Errorf("%d templates still noted as waiting", n)
			}
		})
	}
}

// TestWaitNotedAfterThePolicyChanged: a template's pass that read the policy it waits for before a change the
// policy's own pass handled first queues the template again, for that pass did not find it waiting.
func TestWaitNotedAfterThePolicyChanged(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, c, _ := waitingHarness(ctx, t, false)
	shopKey := templates.Key{GVK: deploymentKind, NamespacedName: types.NamespacedName{Namespace: "m", Name: "shop"}}
	top := &policyv1alpha1.PropagationPolicy{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "m", Name: "new"}, top); err != nil {
		t.Fatal(err)
	}
	seen := FromPropagationPolicy(top.DeepCopy())

	r.queue.pending = nil
	if _, err := r.waitFor(ctx, shopKey, seen, []string{"shop-overrides"}); err != nil {
		t.Fatal(err)
	}
	if len(r.queue.pending) != 0 {
		t.Errorf("the policy is as the pass read it, yet the template was queued: %v", r.queue.pending)
	}
	top.Spec.ResourceSelectors = byName("other")
	if err := c.Update(ctx, top); err != nil {
		t.Fatal(err)
	}
	if _, err := r.waitFor(ctx, shopKey, seen, []string{"shop-overrides"}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.queue.pending, []templates.Key{shopKey}) {
		t.Errorf("the policy changed since the pass read it; queued %v, want shop", r.queue.pending)
	}
}

// TestWaitingTemplateToldOfMissingOverridesOnce: a template whose holder is gone, waiting for the top policy's
// dependentOverrides, is rechecked every holderLostRecheck; it is told what is missing (an Event) when it starts
// waiting and when that changes, not at every recheck nor at a change of the policy that leaves it as it was.
func TestWaitingTemplateToldOfMissingOverridesOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, c, _ := waitingHarness(ctx, t, false)
	shopKey := templates.Key{GVK: deploymentKind, NamespacedName: types.NamespacedName{Namespace: "m", Name: "shop"}}
	topKey := client.ObjectKey{Namespace: "m", Name: "new"}
	told := func() []string {
		var out []string
		for _, e := range r.Recorder.(*fedtest.Events).All() {
			if strings.Contains(e, " "+ReasonDependentOverridesMissing+" ") {
				out = append(out, e)
			}
		}
		return out
	}
	recheck := func(times int) {
		t.Helper()
		for range times {
			res, err := r.reconcileTemplate(ctx, shopKey)
			if err != nil {
				t.Fatal(err)
			}
			if res.RequeueAfter != holderLostRecheck {
				t.Fatalf("shop is looked at again after %s, want %s", res.RequeueAfter, holderLostRecheck)
			}
		}
	}
	changeTop := func(change func(*policyv1alpha1.PropagationPolicy)) {
		t.Helper()
		top := &policyv1alpha1.PropagationPolicy{}
		if err := c.Get(ctx, topKey, top); err != nil {
			t.Fatal(err)
		}
		change(top)
		if err := c.Update(ctx, top); err != nil {
			t.Fatal(err)
		}
		if _, err := r.reconcilePolicy(ctx, reconcile.Request{NamespacedName: topKey}); err != nil {
			t.Fatal(err)
		}
	}

	recheck(5)
	if got := told(); len(got) != 1 || !strings.Contains(got[0], "waits for the overrides it depends on: shop-overrides") {
		t.Fatalf("five rechecks of a wait that did not change told %q, want it once", got)
	}
	changeTop(func(p *policyv1alpha1.PropagationPolicy) { p.Labels = map[string]string{"team": "shop"} })
	recheck(2)
	if got := told(); len(got) != 1 {
		t.Errorf("a change of the policy that leaves the same overrides missing told it again: %q", got)
	}
	changeTop(func(p *policyv1alpha1.PropagationPolicy) {
		p.Spec.DependentOverrides = append(p.Spec.DependentOverrides, "shop-secrets")
	})
	recheck(2)
	if got := told(); len(got) != 2 || !strings.HasSuffix(got[1], ": shop-overrides, shop-secrets") {
		t.Errorf("one more override missing: told %q, want it told once more, naming both", got)
	}
	if err := c.Create(ctx, &policyv1alpha1.OverridePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "m", Name: "shop-overrides"}}); err != nil {
		t.Fatal(err)
	}
	recheck(2)
	if got := told(); len(got) != 3 || !strings.HasSuffix(got[2], ": shop-secrets") {
		t.Errorf("one of the overrides made: told %q, want it told once more, naming the other", got)
	}
}

// waitingHarness is a detector on fakes: template m/shop is claimed by policy m/old, which is gone, and has its
// binding; policy m/new (priority 20) selects it and depends on an override that does not exist; with catchAll, a
// ClusterPropagationPolicy selects every Deployment, ranked below. The Deployment informer runs and shows shop.
func waitingHarness(ctx context.Context, t *testing.T, catchAll bool) (*Reconciler, client.Client, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	shop := webDeployment("m", "shop", 1)
	shop.SetLabels(map[string]string{names.PropagationPolicyLabel: "old"})
	shop.SetUID("shop-uid")
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(shop)
	if err != nil {
		t.Fatal(err)
	}
	shopU := &unstructured.Unstructured{Object: content}
	shopU.SetGroupVersionKind(deploymentKind)
	binding := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "m", Name: "shop-deployment", Labels: map[string]string{names.PropagationPolicyLabel: "old"}},
		Spec: workv1alpha1.ResourceBindingSpec{Replicas: 1, Resource: workv1alpha1.ObjectReference{
			APIVersion: "apps/v1", Kind: "Deployment", Namespace: "m", Name: "shop", UID: "shop-uid"}}}
	objs := []client.Object{namespace("m"), shop, binding,
		&policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "m", Name: "new"},
			Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: byName("shop"), Priority: ptr.To[int32](20),
				DependentOverrides: []string{"shop-overrides"}}}}
	if catchAll {
		objs = append(objs, &policyv1alpha1.ClusterPropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "catch-all"},
			Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: byKind()}})
	}
	c := fake.NewClientBuilder().WithScheme(fedtest.Scheme()).WithObjects(objs...).Build()
	resource := deploymentKind.GroupVersion().WithResource("deployments")
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{resource: "DeploymentList"}, shopU)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(deploymentKind, meta.RESTScopeNamespace)
	cache := templates.New(dyn, c)
	go func() { _ = cache.Start(ctx) }()
	r := &Reconciler{Client: c, APIReader: c, Dynamic: dyn, Mapper: mapper, Templates: cache,
		Interpreter: interpreter.Layers{Native: native.New()}.Chain(), Recorder: &fedtest.Events{},
		ReleaseGrace: -1, UnknownKindRetry: time.Minute, now: time.Now}
	r.queue = &templateQueue{canonical: cache.Canonical}
	if _, err := r.reconcilePolicy(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "m", Name: "new"}}); err != nil {
		t.Fatal(err)
	}
	shopKey := templates.KeyOf(shopU)
	for deadline := time.Now().Add(10 * time.Second); !cache.Holds(shopKey); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the informer never showed the template")
		}
	}
	return r, c, dyn
}

// claimIs checks shop's claim labels, and its binding's: want, or no claim and no binding when want is nil.
func claimIs(ctx context.Context, t *testing.T, c client.Client, dyn *dynamicfake.FakeDynamicClient, want map[string]string) {
	t.Helper()
	shop, err := dyn.Resource(deploymentKind.GroupVersion().WithResource("deployments")).Namespace("m").Get(ctx, "shop", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claims := func(labels map[string]string) map[string]string {
		out := map[string]string{}
		for _, l := range []string{names.PropagationPolicyLabel, names.ClusterPropagationPolicyLabel} {
			if v, ok := labels[l]; ok {
				out[l] = v
			}
		}
		return out
	}
	if got := claims(shop.GetLabels()); !maps.Equal(got, want) {
		t.Errorf("shop's claim %v, want %v", got, want)
	}
	var rb workv1alpha1.ResourceBinding
	err = c.Get(ctx, client.ObjectKey{Namespace: "m", Name: "shop-deployment"}, &rb)
	switch {
	case len(want) == 0 && !apierrors.IsNotFound(err):
		t.Errorf("shop's binding: %v, labels %v; want it gone", err, rb.Labels)
	case len(want) > 0 && err != nil:
		t.Errorf("shop's binding: %v", err)
	case len(want) > 0 && !maps.Equal(claims(rb.Labels), want):
		t.Errorf("shop's binding claimed by %v, want %v", claims(rb.Labels), want)
	}
}
