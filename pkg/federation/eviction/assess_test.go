package eviction

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

func TestAssess(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(-d)); return &t }
	yes, no := true, false
	seconds := func(n int32) *int32 { return &n }
	task := func(cluster string, created *metav1.Time, mutate ...func(*workv1alpha1.GracefulEvictionTask)) workv1alpha1.GracefulEvictionTask {
		t := workv1alpha1.GracefulEvictionTask{FromCluster: cluster, Reason: "TaintUntolerated", Producer: "test", CreationTimestamp: created}
		for _, m := range mutate {
			m(&t)
		}
		return t
	}
	binding := func(healthy bool, tasks ...workv1alpha1.GracefulEvictionTask) *workv1alpha1.ResourceBinding {
		health := workv1alpha1.ResourceHealthy
		if !healthy {
			health = workv1alpha1.ResourceUnhealthy
		}
		return &workv1alpha1.ResourceBinding{
			ObjectMeta: metav1.ObjectMeta{Generation: 3},
			Spec:       workv1alpha1.ResourceBindingSpec{Clusters: []workv1alpha1.TargetCluster{{Name: "m1"}}, GracefulEvictionTasks: tasks},
			Status: workv1alpha1.ResourceBindingStatus{
				SchedulerObservedGeneration: 3,
				Conditions:                  []metav1.Condition{{Type: workv1alpha1.ConditionFullyApplied, Status: metav1.ConditionTrue, ObservedGeneration: 3}},
				AggregatedStatus:            []workv1alpha1.AggregatedStatusItem{{ClusterName: "m1", Applied: true, Health: health}},
			},
		}
	}
	for _, tc := range []struct {
		name string
		b    *workv1alpha1.ResourceBinding
		want Verdict
	}{
		{"healthy substitute: done", binding(true, task("m2", ago(time.Second))),
			Verdict{Done: map[string]string{"m2": DoneHealthy}, Changed: true}},
		{"unhealthy, within the default timeout: kept until it ends", binding(false, task("m2", ago(time.Minute))),
			Verdict{Keep: []workv1alpha1.GracefulEvictionTask{task("m2", ago(time.Minute))}, Done: map[string]string{}, RecheckAfter: 9 * time.Minute}},
		{"unhealthy past the default timeout: done", binding(false, task("m2", ago(11*time.Minute))),
			Verdict{Done: map[string]string{"m2": DoneTimedOut}, Changed: true}},
		{"the task's own grace period", binding(false, task("m2", ago(time.Minute), func(t *workv1alpha1.GracefulEvictionTask) { t.GracePeriodSeconds = seconds(30) })),
			Verdict{Done: map[string]string{"m2": DoneTimedOut}, Changed: true}},
		{"suppressed: kept, healthy or not", binding(true, task("m2", ago(time.Hour), func(t *workv1alpha1.GracefulEvictionTask) { t.SuppressDeletion = &yes })),
			Verdict{Keep: []workv1alpha1.GracefulEvictionTask{task("m2", ago(time.Hour), func(t *workv1alpha1.GracefulEvictionTask) { t.SuppressDeletion = &yes })}, Done: map[string]string{}}},
		{"suppression cleared: done", binding(false, task("m2", ago(time.Second), func(t *workv1alpha1.GracefulEvictionTask) { t.SuppressDeletion = &no })),
			Verdict{Done: map[string]string{"m2": DoneUnsuppress}, Changed: true}},
		{"no creation time: stamped now, the grace period counts from then", binding(false, task("m2", nil)),
			Verdict{Keep: []workv1alpha1.GracefulEvictionTask{task("m2", ago(0))}, Done: map[string]string{}, Changed: true, RecheckAfter: DefaultTimeout}},
		{"the earliest deadline is the recheck", binding(false, task("m2", ago(time.Minute)), task("m3", ago(8*time.Minute))),
			Verdict{Keep: []workv1alpha1.GracefulEvictionTask{task("m2", ago(time.Minute)), task("m3", ago(8*time.Minute))}, Done: map[string]string{}, RecheckAfter: 2 * time.Minute}},
	} {
		if got := Assess(tc.b, now, DefaultTimeout); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

func TestSubstituteHealthy(t *testing.T) {
	healthy := func() *workv1alpha1.ResourceBinding {
		return &workv1alpha1.ResourceBinding{
			ObjectMeta: metav1.ObjectMeta{Generation: 2},
			Spec:       workv1alpha1.ResourceBindingSpec{Clusters: []workv1alpha1.TargetCluster{{Name: "m1"}, {Name: "m3"}}},
			Status: workv1alpha1.ResourceBindingStatus{
				SchedulerObservedGeneration: 2,
				Conditions:                  []metav1.Condition{{Type: workv1alpha1.ConditionFullyApplied, Status: metav1.ConditionTrue, ObservedGeneration: 2}},
				AggregatedStatus: []workv1alpha1.AggregatedStatusItem{
					{ClusterName: "m1", Applied: true, Health: workv1alpha1.ResourceHealthy},
					{ClusterName: "m3", Applied: true, Health: workv1alpha1.ResourceHealthy},
				},
			},
		}
	}
	for _, tc := range []struct {
		name   string
		mutate func(*workv1alpha1.ResourceBinding)
		want   bool
	}{
		{"all healthy", func(*workv1alpha1.ResourceBinding) {}, true},
		{"not scheduled for this generation", func(b *workv1alpha1.ResourceBinding) { b.Status.SchedulerObservedGeneration = 1 }, false},
		{"not applied for this generation", func(b *workv1alpha1.ResourceBinding) { b.Status.Conditions[0].ObservedGeneration = 1 }, false},
		{"not fully applied", func(b *workv1alpha1.ResourceBinding) { b.Status.Conditions[0].Status = metav1.ConditionFalse }, false},
		{"a cluster unhealthy", func(b *workv1alpha1.ResourceBinding) {
			b.Status.AggregatedStatus[1].Health = workv1alpha1.ResourceUnknown
		}, false},
		{"a cluster not reporting", func(b *workv1alpha1.ResourceBinding) { b.Status.AggregatedStatus = b.Status.AggregatedStatus[:1] }, false},
		{"no clusters", func(b *workv1alpha1.ResourceBinding) { b.Spec.Clusters = nil }, false},
	} {
		b := healthy()
		tc.mutate(b)
		if got := SubstituteHealthy(b); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
