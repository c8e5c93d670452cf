package detector

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
}
