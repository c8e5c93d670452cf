package scheduler

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

func TestGracefulPurge(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    *policyv1alpha1.FailoverBehavior
		want bool
	}{
		{"no failover", nil, false},
		{"failover without cluster behavior: Karmada's default", &policyv1alpha1.FailoverBehavior{}, true},
		{"Gracefully", &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: policyv1alpha1.PurgeModeGracefully}}, true},
		{"Graciously", &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: policyv1alpha1.PurgeModeGraciously}}, true},
		{"unset mode", &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{}}, true},
		{"Directly", &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: policyv1alpha1.PurgeModeDirectly}}, false},
		{"Immediately", &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: policyv1alpha1.PurgeModeImmediately}}, false},
	} {
		if got := GracefulPurge(tc.f); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

var gracePeriod = int32(60)

func appFailover(mode policyv1alpha1.PurgeMode) *policyv1alpha1.FailoverBehavior {
	app := &policyv1alpha1.ApplicationFailoverBehavior{PurgeMode: mode}
	if mode == "" {
		app.GracePeriodSeconds = &gracePeriod
	}
	return &policyv1alpha1.FailoverBehavior{Application: app, Cluster: &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: policyv1alpha1.PurgeModeDirectly}}
}

func appTask(cluster string, mode policyv1alpha1.PurgeMode, at *metav1.Time, mutate func(*workv1alpha1.GracefulEvictionTask)) workv1alpha1.GracefulEvictionTask {
	two := int32(2)
	t := workv1alpha1.GracefulEvictionTask{FromCluster: cluster, Replicas: &two, Reason: ApplicationFailureReason, Producer: EvictionProducer,
		PurgeMode: mode, CreationTimestamp: at, ClustersBeforeFailover: []string{"m1", "m2"}}
	mutate(&t)
	return t
}

func TestEvictionTasks(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	created := metav1.NewTime(now)
	earlier := metav1.NewTime(now.Add(-time.Minute))
	graceful := &policyv1alpha1.FailoverBehavior{}
	direct := &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: policyv1alpha1.PurgeModeDirectly}}
	targets := func(pairs ...any) []workv1alpha1.TargetCluster {
		var out []workv1alpha1.TargetCluster
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, workv1alpha1.TargetCluster{Name: pairs[i].(string), Replicas: int32(pairs[i+1].(int))})
		}
		return out
	}
	task := func(cluster string, replicas int32, at *metav1.Time, before ...string) workv1alpha1.GracefulEvictionTask {
		return workv1alpha1.GracefulEvictionTask{FromCluster: cluster, Replicas: &replicas, Reason: EvictionReason,
			Producer: EvictionProducer, PurgeMode: policyv1alpha1.PurgeModeGracefully, CreationTimestamp: at, ClustersBeforeFailover: before,
			Message: "cluster " + cluster + " unhealthy past the binding's tolerations; its copy stays until the substitute is healthy"}
	}
	two := int32(2)
	for _, tc := range []struct {
		name          string
		tasks         []workv1alpha1.GracefulEvictionTask
		f             *policyv1alpha1.FailoverBehavior
		evicted       []string
		appEvicted    []string
		preserved     map[string]map[string]string
		before, after []workv1alpha1.TargetCluster
		want          []workv1alpha1.GracefulEvictionTask
	}{
		{name: "nothing evicted", f: graceful, before: targets("m1", 2), after: targets("m1", 2)},
		{name: "evicted gracefully: a task with the replicas it had", f: graceful, evicted: []string{"m2"},
			before: targets("m1", 2, "m2", 2), after: targets("m1", 4),
			want: []workv1alpha1.GracefulEvictionTask{task("m2", 2, &created, "m1", "m2")}},
		{name: "evicted directly: no task", f: direct, evicted: []string{"m2"},
			before: targets("m1", 2, "m2", 2), after: targets("m1", 4)},
		{name: "an existing task stays, none doubled", f: graceful, evicted: []string{"m2"},
			tasks:  []workv1alpha1.GracefulEvictionTask{task("m2", 2, &earlier)},
			before: targets("m1", 2, "m2", 2), after: targets("m1", 4),
			want: []workv1alpha1.GracefulEvictionTask{task("m2", 2, &earlier)}},
		{name: "back on the cluster: its task dropped", f: graceful,
			tasks:  []workv1alpha1.GracefulEvictionTask{task("m2", 2, &earlier), task("m3", 1, &earlier)},
			before: targets("m1", 4), after: targets("m1", 2, "m2", 2),
			want: []workv1alpha1.GracefulEvictionTask{task("m3", 1, &earlier)}},
		{name: "evicted but placed there again: no task", f: graceful, evicted: []string{"m2"},
			before: targets("m1", 2, "m2", 2), after: targets("m1", 2, "m2", 2)},
		{name: "without replicas: a task without them", f: graceful, evicted: []string{"m2"},
			before: []workv1alpha1.TargetCluster{{Name: "m1"}, {Name: "m2"}}, after: []workv1alpha1.TargetCluster{{Name: "m1"}},
			want: []workv1alpha1.GracefulEvictionTask{func() workv1alpha1.GracefulEvictionTask {
				t := task("m2", 0, &created, "m1", "m2")
				t.Replicas = nil
				return t
			}()}},
		{name: "evicted from a cluster it was not on: no task", f: graceful, evicted: []string{"m3"},
			before: targets("m1", 2), after: targets("m1", 2)},
		{name: "application failover, Gracefully (the default): a task with its grace period", f: appFailover(""), appEvicted: []string{"m2"},
			before: targets("m1", 2, "m2", 2), after: targets("m1", 4),
			want: []workv1alpha1.GracefulEvictionTask{appTask("m2", policyv1alpha1.PurgeModeGracefully, &created, func(t *workv1alpha1.GracefulEvictionTask) {
				t.GracePeriodSeconds = &gracePeriod
				t.Message = "the workload stayed unhealthy there past its tolerationSeconds; its copy stays until the substitute is healthy"
			})}},
		{name: "application failover, Directly: a task all the same (it keeps the cluster out)", f: appFailover(policyv1alpha1.PurgeModeDirectly), appEvicted: []string{"m2"},
			before: targets("m1", 2, "m2", 2), after: targets("m1", 4),
			want: []workv1alpha1.GracefulEvictionTask{appTask("m2", policyv1alpha1.PurgeModeDirectly, &created, func(t *workv1alpha1.GracefulEvictionTask) {
				t.Message = "the workload stayed unhealthy there past its tolerationSeconds; its copy goes at once, and the cluster takes no replicas until the substitute is healthy"
			})}},
		{name: "left by cluster and application failover at once: the application's task", f: &policyv1alpha1.FailoverBehavior{
			Application: &policyv1alpha1.ApplicationFailoverBehavior{PurgeMode: policyv1alpha1.PurgeModeDirectly}},
			evicted: []string{"m2"}, appEvicted: []string{"m2"}, before: targets("m1", 2, "m2", 2), after: targets("m1", 4),
			want: []workv1alpha1.GracefulEvictionTask{appTask("m2", policyv1alpha1.PurgeModeDirectly, &created, func(t *workv1alpha1.GracefulEvictionTask) {
				t.Message = "the workload stayed unhealthy there past its tolerationSeconds; its copy goes at once, and the cluster takes no replicas until the substitute is healthy"
			})}},
		{name: "cluster failover, Directly: a task only to carry preserved state", f: direct, evicted: []string{"m1", "m2"},
			preserved: map[string]map[string]string{"m2": {"example.io/job": "7"}},
			before:    targets("m1", 2, "m2", 2, "m3", 2), after: targets("m3", 6),
			want: []workv1alpha1.GracefulEvictionTask{{FromCluster: "m2", Replicas: &two, Reason: EvictionReason,
				Producer: EvictionProducer, PurgeMode: policyv1alpha1.PurgeModeDirectly, CreationTimestamp: &created,
				ClustersBeforeFailover: []string{"m1", "m2", "m3"}, PreservedLabelState: map[string]string{"example.io/job": "7"},
				Message: "cluster m2 unhealthy past the binding's tolerations; its copy goes at once, and the state preserved from it goes to the substitute"}}},
		{name: "preserved state goes on the task of its cluster", f: appFailover(policyv1alpha1.PurgeModeDirectly), appEvicted: []string{"m2"},
			preserved: map[string]map[string]string{"m2": {"example.io/job": "7"}, "m1": {"example.io/job": "8"}},
			before:    targets("m1", 2, "m2", 2), after: targets("m1", 4),
			want: []workv1alpha1.GracefulEvictionTask{appTask("m2", policyv1alpha1.PurgeModeDirectly, &created, func(t *workv1alpha1.GracefulEvictionTask) {
				t.PreservedLabelState = map[string]string{"example.io/job": "7"}
				t.Message = "the workload stayed unhealthy there past its tolerationSeconds; its copy goes at once, and the cluster takes no replicas until the substitute is healthy"
			})}},
		{name: "application failover, Never: deletion suppressed", f: appFailover(policyv1alpha1.PurgeModeNever), appEvicted: []string{"m2"},
			before: targets("m1", 2, "m2", 2), after: targets("m1", 4),
			want: []workv1alpha1.GracefulEvictionTask{appTask("m2", policyv1alpha1.PurgeModeNever, &created, func(t *workv1alpha1.GracefulEvictionTask) {
				yes := true
				t.SuppressDeletion = &yes
				t.Message = "the workload stayed unhealthy there past its tolerationSeconds; its copy stays until suppressDeletion is set to false"
			})}},
	} {
		got := EvictionTasks(tc.tasks, tc.f, Departure{Evicted: tc.evicted, AppEvicted: tc.appEvicted, Preserved: tc.preserved}, tc.before, tc.after, now)
		if !equality.Semantic.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}
