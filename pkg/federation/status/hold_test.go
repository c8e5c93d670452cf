package status

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/rendering"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// TestBindingStatusWaitsForEveryCluster reports two members' Works by hand, as execution and the Work status
// stage would, one after the other: the binding's status is written once both have reported, not once per
// member, also when their reports, each within the hold limit of the one before, span more than it; and a
// binding one member never reports on is written with what came once the hold limit passes.
func TestBindingStatusWaitsForEveryCluster(t *testing.T) {
	const holdLimit = 6 * time.Second
	f := fedtest.Start(t, fedtest.Options{Members: 2})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	host := f.Host
	if err := host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	for _, m := range f.Members {
		setReady(t, host, m.Name(), metav1.ConditionTrue)
	}
	renderings := &rendering.Store{}
	fedtest.StartManager(t, f.Federation.Host.Config(), func(mgr ctrl.Manager) error {
		chain := interpreter.Layers{Native: native.New()}.Chain()
		return (&BindingReconciler{Client: mgr.GetClient(), Aggregator: chain, Renderings: renderings, Coalesce: 100 * time.Millisecond, HoldLimit: holdLimit}).SetupWithManager(mgr)
	})
	// rendered hands over the binding stage's outcome (that stage is not running here) of rendering rb's Works.
	rendered := func(rb *workv1alpha1.ResourceBinding) {
		var cur workv1alpha1.ResourceBinding
		if err := host.Get(ctx, client.ObjectKeyFromObject(rb), &cur); err != nil {
			t.Fatal(err)
		}
		renderings.Set(&cur, rendering.Outcome{Generation: cur.Generation})
	}

	// report sets a Work's status as a member that applied it and observed its Deployment ready.
	report := func(rb *workv1alpha1.ResourceBinding, cluster string) { reportWork(t, ctx, host, rb, cluster, true) }
	unwritten := func(rb *workv1alpha1.ResourceBinding, d time.Duration) {
		t.Helper()
		for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			var cur workv1alpha1.ResourceBinding
			if err := host.Get(ctx, client.ObjectKeyFromObject(rb), &cur); err != nil {
				t.Fatal(err)
			}
			if len(cur.Status.AggregatedStatus) > 0 {
				t.Fatalf("%s written while a member had not reported: %+v", rb.Name, cur.Status.AggregatedStatus)
			}
		}
	}

	web := bindToMembers(t, f, "web")
	report(web, "member1")
	unwritten(web, 2*time.Second)
	report(web, "member2")
	// Both reported; the binding stage's outcome of rendering the binding (in real life long here by now) is
	// awaited too, to judge FullyApplied for the same write.
	unwritten(web, 1500*time.Millisecond)
	rendered(web)
	// Written for both well before the hold limit since member1's report (6 s) would have passed.
	fedtest.Eventually(t, 4*time.Second, "web's status once both members reported and the binding stage's outcome came", func() error {
		healthy := map[string]workv1alpha1.ResourceHealth{"member1": workv1alpha1.ResourceHealthy, "member2": workv1alpha1.ResourceHealthy}
		if err := itemsAre(ctx, host, web, healthy, 2); err != nil {
			return err
		}
		var cur workv1alpha1.ResourceBinding
		if err := host.Get(ctx, client.ObjectKeyFromObject(web), &cur); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(cur.Status.Conditions, workv1alpha1.ConditionFullyApplied) {
			return fmt.Errorf("FullyApplied not judged with the items: %+v", cur.Status.Conditions)
		}
		return templateReady(ctx, host, 4)
	})

	// member1 applies, then observes, then member2 reports: each within the limit of the one before, together
	// longer than it.
	spread := bindToMembers(t, f, "spread")
	rendered(spread)
	reportWork(t, ctx, host, spread, "member1", false)
	unwritten(spread, 3500*time.Millisecond)
	report(spread, "member1")
	unwritten(spread, 3500*time.Millisecond)
	report(spread, "member2")
	fedtest.Eventually(t, 4*time.Second, "spread's status once both members reported", func() error {
		healthy := map[string]workv1alpha1.ResourceHealth{"member1": workv1alpha1.ResourceHealthy, "member2": workv1alpha1.ResourceHealthy}
		return itemsAre(ctx, host, spread, healthy, 2)
	})

	api := bindToMembers(t, f, "api")
	rendered(api)
	report(api, "member1")
	unwritten(api, 2*time.Second)
	fedtest.Eventually(t, holdLimit+5*time.Second, "api's status with member1 only, once the hold limit passed", func() error {
		var cur workv1alpha1.ResourceBinding
		if err := host.Get(ctx, client.ObjectKeyFromObject(api), &cur); err != nil {
			return err
		}
		items := cur.Status.AggregatedStatus
		if len(items) != 2 || !items[0].Applied || items[0].Health != workv1alpha1.ResourceHealthy ||
			items[1].Applied || items[1].AppliedMessage != rendering.NotAppliedYet {
			return fmt.Errorf("aggregatedStatus %+v", items)
		}
		return nil
	})
}

// reportWork sets the status of rb's Work for cluster as a member that applied it and, if observed, observed
// its Deployment ready.
func reportWork(t *testing.T, ctx context.Context, host client.Client, rb *workv1alpha1.ResourceBinding, cluster string, observed bool) {
	t.Helper()
	var w workv1alpha1.Work
	if err := host.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.Work(rb.Name, cluster)}, &w); err != nil {
		t.Fatal(err)
	}
	meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionTrue, Reason: "Applied", ObservedGeneration: w.Generation})
	w.Status.ManifestStatuses = nil
	if observed {
		w.Status.ManifestStatuses = []workv1alpha1.ManifestStatus{{
			Identifier: workv1alpha1.ResourceIdentifier{Ordinal: 0, Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Namespace: ns, Name: rb.Spec.Resource.Name},
			Status:     raw(`{"replicas":2,"readyReplicas":2,"observedGeneration":1}`),
			Health:     workv1alpha1.ResourceHealthy,
		}}
	}
	if err := host.Status().Update(ctx, &w); err != nil {
		t.Fatal(err)
	}
}
