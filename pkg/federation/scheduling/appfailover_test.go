package scheduling

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/scheduler"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// testApplicationFailover: a workload unhealthy on member2 past its toleration leaves it for member1, with a task
// that keeps member2 out; once the task is gone it stays off (the placement did not change). One that can go
// nowhere else stays where it is, Scheduled.
func testApplicationFailover(t *testing.T, c client.Client) {
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}); err != nil {
		t.Fatal(err)
	}
	one := int32(1)
	binding := func(name string, affinity *policyv1alpha1.ClusterAffinity) *workv1alpha1.ResourceBinding {
		return &workv1alpha1.ResourceBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name + "-deployment"},
			Spec: workv1alpha1.ResourceBindingSpec{
				Resource: workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: name},
				Replicas: 4,
				Failover: &policyv1alpha1.FailoverBehavior{Application: &policyv1alpha1.ApplicationFailoverBehavior{
					DecisionConditions: policyv1alpha1.DecisionConditions{TolerationSeconds: &one},
					PurgeMode:          policyv1alpha1.PurgeModeDirectly}},
				Placement: &policyv1alpha1.Placement{
					ClusterAffinity: affinity,
					ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
						ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
						ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
					},
				},
			},
		}
	}
	// unhealthyOn reports the workload Unhealthy on cluster, with status there when given, and Healthy elsewhere.
	unhealthyOn := func(key client.ObjectKey, cluster string, status ...string) {
		t.Helper()
		writeAggregatedStatus(t, c, key, func(rb *workv1alpha1.ResourceBinding) []workv1alpha1.AggregatedStatusItem {
			var items []workv1alpha1.AggregatedStatusItem
			for _, tc := range rb.Spec.Clusters {
				health := workv1alpha1.ResourceHealthy
				if tc.Name == cluster {
					health = workv1alpha1.ResourceUnhealthy
				}
				item := workv1alpha1.AggregatedStatusItem{ClusterName: tc.Name, Applied: true, Health: health}
				if tc.Name == cluster && len(status) > 0 {
					item.Status = &runtime.RawExtension{Raw: []byte(status[0])}
				}
				items = append(items, item)
			}
			return items
		})
	}

	web := binding("web", &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1", "member2"}})
	if err := c.Create(ctx, web); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(web)
	fedtest.Eventually(t, 20*time.Second, "2 and 2", scheduledTo(c, key, []workv1alpha1.TargetCluster{{Name: "member1", Replicas: 2}, {Name: "member2", Replicas: 2}}))
	unhealthyOn(key, "member2")
	fedtest.Eventually(t, 20*time.Second, "all on member1", scheduledTo(c, key, []workv1alpha1.TargetCluster{{Name: "member1", Replicas: 4}}))
	if err := c.Get(ctx, key, web); err != nil {
		t.Fatal(err)
	}
	tasks := web.Spec.GracefulEvictionTasks
	if len(tasks) != 1 || tasks[0].FromCluster != "member2" || tasks[0].Reason != scheduler.ApplicationFailureReason ||
		tasks[0].PurgeMode != policyv1alpha1.PurgeModeDirectly {
		t.Fatalf("tasks %+v, want one of member2 for ApplicationFailure, Directly", tasks)
	}
	fedtest.Eventually(t, 10*time.Second, "an ApplicationFailover event", func() error {
		var events corev1.EventList
		if err := c.List(ctx, &events, client.InNamespace("shop")); err != nil {
			return err
		}
		if !slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
			return e.Reason == ReasonApplicationFailover && e.InvolvedObject.Name == web.Name
		}) {
			return fmt.Errorf("none among %d events", len(events.Items))
		}
		return nil
	})
	// The task ends (the eviction stage's work): the binding is looked at again and stays where it is.
	web.Spec.GracefulEvictionTasks = nil
	if err := c.Update(ctx, web); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if err := scheduledTo(c, key, []workv1alpha1.TargetCluster{{Name: "member1", Replicas: 4}})(); err != nil {
		t.Errorf("after the task ended: %v", err)
	}

	// Only member2 may take it: unhealthy there, it stays there.
	only := binding("only", &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member2"}})
	if err := c.Create(ctx, only); err != nil {
		t.Fatal(err)
	}
	onlyKey := client.ObjectKeyFromObject(only)
	fedtest.Eventually(t, 20*time.Second, "on member2", scheduledTo(c, onlyKey, []workv1alpha1.TargetCluster{{Name: "member2", Replicas: 4}}))
	unhealthyOn(onlyKey, "member2")
	time.Sleep(3 * time.Second)
	if err := scheduledTo(c, onlyKey, []workv1alpha1.TargetCluster{{Name: "member2", Replicas: 4}})(); err != nil {
		t.Errorf("with nowhere else to go: %v", err)
	}
	if err := c.Get(ctx, onlyKey, only); err != nil {
		t.Fatal(err)
	}
	if !meta.IsStatusConditionTrue(only.Status.Conditions, workv1alpha1.ConditionScheduled) || len(only.Spec.GracefulEvictionTasks) > 0 {
		t.Errorf("with nowhere else to go: conditions %+v, tasks %+v", only.Status.Conditions, only.Spec.GracefulEvictionTasks)
	}

	// Duplicated on one of member1 and member2, its state carried over: not while it cannot be read.
	stream := binding("stream", &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1", "member2"}})
	stream.Spec.Replicas = 1
	stream.Spec.Placement.ReplicaScheduling = nil
	stream.Spec.Placement.SpreadConstraints = []policyv1alpha1.SpreadConstraint{{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MinGroups: 1, MaxGroups: 1}}
	stream.Spec.Failover.Application.StatePreservation = &policyv1alpha1.StatePreservation{Rules: []policyv1alpha1.StatePreservationRule{
		{AliasLabelName: "example.io/job", JSONPath: "{ .job }"}}}
	if err := c.Create(ctx, stream); err != nil {
		t.Fatal(err)
	}
	streamKey := client.ObjectKeyFromObject(stream)
	from, to := onOneOfTwo(t, c, stream)
	unhealthyOn(streamKey, from, `{"checkpoint":3}`)
	fedtest.Eventually(t, 10*time.Second, "a StatePreservationFailed event", func() error {
		var events corev1.EventList
		if err := c.List(ctx, &events, client.InNamespace("shop")); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Reason == ReasonStatePreservationFailed && e.InvolvedObject.Name == stream.Name {
				if want := "stays on " + from + ": its state cannot be preserved: rule example.io/job: jsonPath \"{ .job }\": job is not found"; e.Message != want {
					return fmt.Errorf("message %q, want %q", e.Message, want)
				}
				return nil
			}
		}
		return fmt.Errorf("none among %d events", len(events.Items))
	})
	if err := scheduledTo(c, streamKey, []workv1alpha1.TargetCluster{{Name: from, Replicas: 1}})(); err != nil {
		t.Errorf("state not readable: %v", err)
	}
	unhealthyOn(streamKey, from, `{"job":"j7"}`)
	fedtest.Eventually(t, 20*time.Second, "moved", scheduledTo(c, streamKey, []workv1alpha1.TargetCluster{{Name: to, Replicas: 1}}))
	if err := c.Get(ctx, streamKey, stream); err != nil {
		t.Fatal(err)
	}
	if tasks := stream.Spec.GracefulEvictionTasks; len(tasks) != 1 || tasks[0].FromCluster != from ||
		!reflect.DeepEqual(tasks[0].PreservedLabelState, map[string]string{"example.io/job": "j7"}) || !slices.Equal(tasks[0].ClustersBeforeFailover, []string{from}) {
		t.Errorf("tasks %+v, want one of %s with the job's state", tasks, from)
	}
	if got := scheduler.PreservedLabels(&stream.Spec, to); got["example.io/job"] != "j7" {
		t.Errorf("labels for %s's copy: %v", to, got)
	}
}
