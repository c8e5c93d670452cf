package detector

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// testSchedulePriority: a policy naming a PriorityClass that does not exist claims its template but writes no
// binding, and says why; once the class exists the binding is written with the class's value.
func testSchedulePriority(t *testing.T, c client.Client, events *fedtest.Events) {
	ctx := context.Background()
	createAll(t, c, namespace("d"),
		&policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "d", Name: "urgent"},
			Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: byName("job"), SchedulePriority: &policyv1alpha1.SchedulePriority{
				PriorityClassSource: policyv1alpha1.KubePriorityClass, PriorityClassName: "fedmesh-urgent"}}},
		webDeployment("d", "job", 1))
	waitEvent(t, events, "", ReasonPriorityClassNotFound,
		"PropagationPolicy d/urgent names PriorityClass fedmesh-urgent, which does not exist: the binding keeps the priority it has, or waits for the class")
	waitLabels(t, c, "d", "job", map[string]string{names.PropagationPolicyLabel: "urgent"})
	var rb workv1alpha1.ResourceBinding
	if err := c.Get(ctx, client.ObjectKey{Namespace: "d", Name: "job-deployment"}, &rb); !apierrors.IsNotFound(err) {
		t.Fatalf("a binding without its priority: %v %+v", err, rb.Spec.SchedulePriority)
	}

	start := time.Now()
	if err := c.Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "fedmesh-urgent"}, Value: 1000}); err != nil {
		t.Fatal(err)
	}
	waitBinding(t, c, "d", "job-deployment", func(rb *workv1alpha1.ResourceBinding) error {
		if sp := rb.Spec.SchedulePriority; sp == nil || sp.Priority != 1000 {
			return fmt.Errorf("schedulePriority %+v", sp)
		}
		return nil
	})
	t.Logf("binding written %s after the class", time.Since(start).Round(time.Millisecond))

	// The policy names a class not there yet: the binding keeps its priority, and a change of the template
	// still reaches it.
	if err := c.Patch(ctx, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "d", Name: "urgent"}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"schedulePriority":{"priorityClassName":"fedmesh-later"}}}`))); err != nil {
		t.Fatal(err)
	}
	if err := c.Patch(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "d", Name: "job"}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":3}}`))); err != nil {
		t.Fatal(err)
	}
	waitBinding(t, c, "d", "job-deployment", func(rb *workv1alpha1.ResourceBinding) error {
		if sp := rb.Spec.SchedulePriority; rb.Spec.Replicas != 3 || sp == nil || sp.Priority != 1000 {
			return fmt.Errorf("replicas %d, schedulePriority %+v", rb.Spec.Replicas, sp)
		}
		return nil
	})
	if events.Find("", ReasonPriorityClassNotFound, "names PriorityClass fedmesh-later") == "" {
		t.Errorf("no %s event for fedmesh-later among %v", ReasonPriorityClassNotFound, events.All())
	}
}
