package detector

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// testDependentOverrides: a policy naming an OverridePolicy that does not exist in dependentOverrides neither
// claims its template nor writes a binding, and says why; once the override exists it does both. Meanwhile it
// takes nothing from the policy that holds a template.
func testDependentOverrides(t *testing.T, c client.Client, events *fedtest.Events) {
	ctx := context.Background()
	createAll(t, c, namespace("e"),
		&policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "e", Name: "guarded"},
			Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: byName("site"), DependentOverrides: []string{"mirror"}}},
		webDeployment("e", "site", 1))
	waitEvent(t, events, "site", ReasonDependentOverridesMissing, "PropagationPolicy e/guarded waits for the overrides it depends on: mirror")
	var d appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: "e", Name: "site"}, &d); err != nil {
		t.Fatal(err)
	}
	var rb workv1alpha1.ResourceBinding
	if err := c.Get(ctx, client.ObjectKey{Namespace: "e", Name: "site-deployment"}, &rb); !apierrors.IsNotFound(err) || d.Labels[names.PropagationPolicyLabel] != "" {
		t.Fatalf("the policy took effect early: binding %v, template labels %v", err, d.Labels)
	}
	if err := c.Create(ctx, &policyv1alpha1.OverridePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "e", Name: "mirror"},
		Spec: policyv1alpha1.OverrideSpec{OverrideRules: []policyv1alpha1.RuleWithCluster{{Overriders: policyv1alpha1.Overriders{
			LabelsOverrider: []policyv1alpha1.LabelAnnotationOverrider{{Operator: "add", Value: map[string]string{"mirrored": "yes"}}}}}}},
	}); err != nil {
		t.Fatal(err)
	}
	waitLabels(t, c, "e", "site", map[string]string{names.PropagationPolicyLabel: "guarded"})
	waitBinding(t, c, "e", "site-deployment", func(*workv1alpha1.ResourceBinding) error { return nil })

	// A waiting policy preempts nothing: a template another policy holds stays with it, and its changes still
	// reach the binding, until the override exists.
	createAll(t, c, webDeployment("e", "cart", 1))
	waitLabels(t, c, "e", "cart", map[string]string{names.ClusterPropagationPolicyLabel: "all-deployments"})
	createAll(t, c, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "e", Name: "takeover"},
		Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: byName("cart"), Preemption: policyv1alpha1.PreemptAlways,
			DependentOverrides: []string{"later"}}})
	waitEvent(t, events, "cart", ReasonDependentOverridesMissing, "PropagationPolicy e/takeover waits for the overrides it depends on: later")
	if err := c.Patch(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "e", Name: "cart"}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":3}}`))); err != nil {
		t.Fatal(err)
	}
	waitBinding(t, c, "e", "cart-deployment", func(rb *workv1alpha1.ResourceBinding) error {
		if rb.Spec.Replicas != 3 || rb.Labels[names.ClusterPropagationPolicyLabel] != "all-deployments" {
			return fmt.Errorf("replicas %d, labels %v", rb.Spec.Replicas, rb.Labels)
		}
		return nil
	})
	if err := c.Create(ctx, &policyv1alpha1.OverridePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "e", Name: "later"},
		Spec: policyv1alpha1.OverrideSpec{OverrideRules: []policyv1alpha1.RuleWithCluster{{Overriders: policyv1alpha1.Overriders{
			LabelsOverrider: []policyv1alpha1.LabelAnnotationOverrider{{Operator: "add", Value: map[string]string{"later": "yes"}}}}}}},
	}); err != nil {
		t.Fatal(err)
	}
	waitLabels(t, c, "e", "cart", map[string]string{names.PropagationPolicyLabel: "takeover"})

	// A policy replaced by one that waits: the template waits for the new one, keeping its claim and binding, and
	// is neither handed to the cluster-wide policy ranked below (which would keep it for good) nor released. (The
	// old policy preempts, to take the template whichever policy the detector sees first.)
	old := &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "e", Name: "old"},
		Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: byName("shop"), Preemption: policyv1alpha1.PreemptAlways}}
	createAll(t, c, old, webDeployment("e", "shop", 1))
	waitLabels(t, c, "e", "shop", map[string]string{names.PropagationPolicyLabel: "old"})
	createAll(t, c, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "e", Name: "new"},
		Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: byName("shop"), Priority: ptr.To[int32](20),
			DependentOverrides: []string{"shop-overrides"}}})
	if err := c.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, events, "shop", ReasonDependentOverridesMissing, "PropagationPolicy e/new waits for the overrides it depends on: shop-overrides")
	for deadline := time.Now().Add(3 * testReleaseGrace); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var d appsv1.Deployment
		var rb workv1alpha1.ResourceBinding
		if err := c.Get(ctx, client.ObjectKey{Namespace: "e", Name: "shop"}, &d); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "e", Name: "shop-deployment"}, &rb); err != nil || rb.DeletionTimestamp != nil ||
			d.Labels[names.PropagationPolicyLabel] != "old" || d.Labels[names.ClusterPropagationPolicyLabel] != "" {
			t.Fatalf("while e/new waits: template claim labels %v; binding %v, labels %v, deleting %v",
				d.Labels, err, rb.Labels, rb.DeletionTimestamp != nil)
		}
	}
	createAll(t, c, &policyv1alpha1.OverridePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "e", Name: "shop-overrides"},
		Spec: policyv1alpha1.OverrideSpec{OverrideRules: []policyv1alpha1.RuleWithCluster{{Overriders: policyv1alpha1.Overriders{
			LabelsOverrider: []policyv1alpha1.LabelAnnotationOverrider{{Operator: "add", Value: map[string]string{"shop": "yes"}}}}}}}})
	waitLabels(t, c, "e", "shop", map[string]string{names.PropagationPolicyLabel: "new"})
	waitBinding(t, c, "e", "shop-deployment", claimedBy(names.PropagationPolicyLabel, "new"))
}

// TestInEffect: a policy waiting for its dependentOverrides takes nothing from a live holder that still selects
// the template, which stays with the best policy not waiting; every other template waits for it, claim and binding
// as they are, whoever ranks below it.
func TestInEffect(t *testing.T) {
	const override = "ov"
	top := pp("m", "new", byName("web"), priority(10), func(s *policyv1alpha1.PropagationSpec) {
		s.DependentOverrides = []string{override}
	})
	topPreempting := pp("m", "new", byName("web"), priority(10), preempt, func(s *policyv1alpha1.PropagationSpec) {
		s.DependentOverrides = []string{override}
	})
	old := pp("m", "old", byName("web"))
	oldWaiting := pp("m", "old", byName("web"), func(s *policyv1alpha1.PropagationSpec) { s.DependentOverrides = []string{"old-ov"} })
	oldElsewhere := pp("m", "old", byName("api"))
	catchAll := cpp("catch-all", byKind())
	claimedBy := func(label, name string) map[string]string { return map[string]string{label: name} }

	for _, tc := range []struct {
		name       string
		labels     map[string]string
		candidates []Policy
		overrides  bool // the override top depends on exists
		want       string
		wantAct    action
	}{
		{"its overrides exist: the top policy claims", claimedBy(names.PropagationPolicyLabel, "old"),
			[]Policy{topPreempting, old, catchAll}, true, "m/new", actClaim},
		{"unclaimed: waits", nil, []Policy{top, catchAll}, false, "m/new", actWait},
		{"held by the top policy: waits", claimedBy(names.PropagationPolicyLabel, "new"),
			[]Policy{top, catchAll}, false, "m/new", actWait},
		{"a live holder selecting it keeps it", claimedBy(names.PropagationPolicyLabel, "old"),
			[]Policy{topPreempting, old, catchAll}, false, "m/old", actClaim},
		{"holder gone: waits, not handed to the policy ranked below", claimedBy(names.PropagationPolicyLabel, "old"),
			[]Policy{top, catchAll}, false, "m/new", actWait},
		{"holder no longer selecting it: waits", claimedBy(names.PropagationPolicyLabel, "old"),
			[]Policy{top, oldElsewhere, catchAll}, false, "m/new", actWait},
		{"cluster-wide holder gone: waits", claimedBy(names.ClusterPropagationPolicyLabel, "gone"),
			[]Policy{top, catchAll}, false, "m/new", actWait},
		{"a live holder waiting too, none other ready: waits, not released", claimedBy(names.PropagationPolicyLabel, "old"),
			[]Policy{topPreempting, oldWaiting}, false, "m/new", actWait},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(fedtest.Scheme())
			if tc.overrides {
				b = b.WithObjects(&policyv1alpha1.OverridePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "m", Name: override}})
			}
			r := &Reconciler{Client: b.Build()}
			obj := deployment("m", "web", tc.labels)
			chosen, ok := Choose(obj, tc.candidates)
			if !ok {
				t.Fatal("no policy chosen")
			}
			p, act, missing, err := r.inEffect(context.Background(), obj, tc.candidates, chosen)
			if err != nil {
				t.Fatal(err)
			}
			if p.Key().String() != tc.want || act != tc.wantAct {
				t.Errorf("inEffect = %s, %s (missing %v); want %s, %s", p, act, missing, tc.want, tc.wantAct)
			}
		})
	}
}
