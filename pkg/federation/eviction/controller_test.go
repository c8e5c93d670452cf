package eviction

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/test/fedtest"
	"github.com/fedmesh/fedmesh/test/promtest"
)

// TestController runs the stage against a real API server: a task ends when the substitute turns healthy, another
// when its grace period is over; a suppressed one stays.
func TestController(t *testing.T) {
	host, c := fedtest.Host(t)
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}); err != nil {
		t.Fatal(err)
	}
	events := &fedtest.Events{}
	// The counters live in the process-wide registry; the test checks what it adds to them.
	doneBefore := map[string]float64{}
	for _, outcome := range []string{"healthy", "timeout"} {
		doneBefore[outcome], _, _ = promtest.Sum(ctrlmetrics.Registry, "fedmesh_federation_graceful_evictions_done_total", map[string]string{"outcome": outcome})
	}
	fedtest.StartManager(t, host.Config(), (&Reconciler{Recorder: events}).SetupWithManager)

	now := metav1.Now()
	yes := true
	grace := int32(2)
	b := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web-deployment"},
		Spec: workv1alpha1.ResourceBindingSpec{
			Resource: workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "apps", Name: "web"},
			Clusters: []workv1alpha1.TargetCluster{{Name: "m1", Replicas: 4}},
			GracefulEvictionTasks: []workv1alpha1.GracefulEvictionTask{
				{FromCluster: "m2", Reason: "TaintUntolerated", Producer: "test", CreationTimestamp: &now},
				{FromCluster: "m3", Reason: "TaintUntolerated", Producer: "test", CreationTimestamp: &now, GracePeriodSeconds: &grace},
				{FromCluster: "m4", Reason: "TaintUntolerated", Producer: "test", CreationTimestamp: &now, SuppressDeletion: &yes},
			},
		},
	}
	if err := c.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	tasks := func(want ...string) func() error {
		return func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
				return err
			}
			var got []string
			for _, t := range b.Spec.GracefulEvictionTasks {
				got = append(got, t.FromCluster)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				return fmt.Errorf("tasks of %v, want %v", got, want)
			}
			return nil
		}
	}
	// m3's grace period ends; m2 waits for a healthy substitute, m4 for a person.
	fedtest.Eventually(t, 10*time.Second, "m3's task done", tasks("m2", "m4"))
	time.Sleep(time.Second)
	if err := tasks("m2", "m4")(); err != nil {
		t.Fatal(err)
	}
	// The substitute on m1 turns healthy, as the scheduler and the status stages would write it.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
			return err
		}
		b.Status = workv1alpha1.ResourceBindingStatus{
			SchedulerObservedGeneration: b.Generation,
			Conditions: []metav1.Condition{{Type: workv1alpha1.ConditionFullyApplied, Status: metav1.ConditionTrue, Reason: "FullyApplied",
				ObservedGeneration: b.Generation, LastTransitionTime: now}},
			AggregatedStatus: []workv1alpha1.AggregatedStatusItem{{ClusterName: "m1", Applied: true, Health: workv1alpha1.ResourceHealthy}},
		}
		return c.Status().Update(ctx, b)
	}); err != nil {
		t.Fatal(err)
	}
	fedtest.Eventually(t, 10*time.Second, "m2's task done", tasks("m4"))
	// The stage records its events and counts after the patch lands, so they may trail it a little.
	fedtest.Eventually(t, 10*time.Second, "events and counts of the done tasks", func() error {
		for _, cluster := range []string{"m2", "m3"} {
			if events.Find(b.Name, ReasonEvictionDone, cluster) == "" {
				return fmt.Errorf("no %s event for %s among %v", ReasonEvictionDone, cluster, events.All())
			}
		}
		for outcome, want := range map[string]float64{"healthy": 1, "timeout": 1} {
			got, _, err := promtest.Sum(ctrlmetrics.Registry, "fedmesh_federation_graceful_evictions_done_total", map[string]string{"outcome": outcome})
			if err != nil || got-doneBefore[outcome] != want {
				return fmt.Errorf("evictions done %s: %v more (%v), want %v", outcome, got-doneBefore[outcome], err, want)
			}
		}
		return nil
	})
}
