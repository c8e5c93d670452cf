package detector

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// A policy deleted while no detector runs, the only one to select its kind, is noticed at the next start: no
// event of the policy will ever come, and no informer of that kind runs, yet its template must be released.
func TestPolicyDeletedWhileDownIsReleasedAtStart(t *testing.T) {
	ctx := context.Background()
	host, c := fedtest.Host(t)
	policy := &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web"},
		Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: byName("web")}}
	for _, o := range []client.Object{namespace("a"), webDeployment("a", "web", 3), policy} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	events := &fedtest.Events{}
	t.Run("a detector claims the template", func(t *testing.T) {
		startDetector(t, host, events, nil) // stopped when this subtest ends
		waitBinding(t, c, "a", "web-deployment", func(*workv1alpha1.ResourceBinding) error { return nil })
		waitLabels(t, c, "a", "web", map[string]string{names.PropagationPolicyLabel: "web"})
	})
	if err := c.Delete(ctx, policy); err != nil {
		t.Fatal(err)
	}
	startDetector(t, host, events, nil)
	waitGone(t, c, client.ObjectKey{Namespace: "a", Name: "web-deployment"}, &workv1alpha1.ResourceBinding{})
	eventually(t, func() error {
		var d metav1.PartialObjectMetadata
		d.SetGroupVersionKind(deploymentKind)
		if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "web"}, &d); err != nil {
			return err
		}
		if v, ok := d.Labels[names.PropagationPolicyLabel]; ok {
			return fmt.Errorf("the template still carries the claim %q", v)
		}
		return nil
	})
}
