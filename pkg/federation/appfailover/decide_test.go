package appfailover

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

func binding(app *policyv1alpha1.ApplicationFailoverBehavior, health map[string]workv1alpha1.ResourceHealth, clusters ...string) *workv1alpha1.ResourceBinding {
	b := &workv1alpha1.ResourceBinding{}
	if app != nil {
		b.Spec.Failover = &policyv1alpha1.FailoverBehavior{Application: app}
	}
	for _, c := range clusters {
		b.Spec.Clusters = append(b.Spec.Clusters, workv1alpha1.TargetCluster{Name: c, Replicas: 2})
		if h, ok := health[c]; ok {
			b.Status.AggregatedStatus = append(b.Status.AggregatedStatus, workv1alpha1.AggregatedStatusItem{ClusterName: c, Applied: true, Health: h})
		}
	}
	return b
}

func TestDecide(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	tolerate := func(seconds int32) *policyv1alpha1.ApplicationFailoverBehavior {
		return &policyv1alpha1.ApplicationFailoverBehavior{DecisionConditions: policyv1alpha1.DecisionConditions{TolerationSeconds: &seconds}}
	}
	unhealthy, healthy, unknown := workv1alpha1.ResourceUnhealthy, workv1alpha1.ResourceHealthy, workv1alpha1.ResourceUnknown
	for _, tc := range []struct {
		name  string
		b     *workv1alpha1.ResourceBinding
		since map[string]time.Time
		want  Decision
	}{
		{"no application failover", binding(nil, map[string]workv1alpha1.ResourceHealth{"m2": unhealthy}, "m1", "m2"), nil,
			Decision{UnhealthySince: map[string]time.Time{}}},
		{"newly unhealthy: the toleration starts", binding(tolerate(30), map[string]workv1alpha1.ResourceHealth{"m1": healthy, "m2": unhealthy}, "m1", "m2"), nil,
			Decision{UnhealthySince: map[string]time.Time{"m2": now}, RecheckAfter: 30 * time.Second}},
		{"unhealthy past the toleration: evicted", binding(tolerate(30), map[string]workv1alpha1.ResourceHealth{"m1": healthy, "m2": unhealthy}, "m1", "m2"),
			map[string]time.Time{"m2": now.Add(-31 * time.Second)},
			Decision{UnhealthySince: map[string]time.Time{"m2": now.Add(-31 * time.Second)}, Evict: []string{"m2"}}},
		{"the default toleration is 300s", binding(&policyv1alpha1.ApplicationFailoverBehavior{}, map[string]workv1alpha1.ResourceHealth{"m2": unhealthy}, "m1", "m2"),
			map[string]time.Time{"m2": now.Add(-100 * time.Second)},
			Decision{UnhealthySince: map[string]time.Time{"m2": now.Add(-100 * time.Second)}, RecheckAfter: 200 * time.Second}},
		{"healthy again: forgotten", binding(tolerate(30), map[string]workv1alpha1.ResourceHealth{"m2": healthy}, "m1", "m2"),
			map[string]time.Time{"m2": now.Add(-31 * time.Second)}, Decision{UnhealthySince: map[string]time.Time{}}},
		{"unknown (cluster not ready) does not count", binding(tolerate(30), map[string]workv1alpha1.ResourceHealth{"m2": unknown}, "m1", "m2"),
			map[string]time.Time{"m2": now.Add(-31 * time.Second)}, Decision{UnhealthySince: map[string]time.Time{}}},
		{"never every cluster", binding(tolerate(0), map[string]workv1alpha1.ResourceHealth{"m1": unhealthy, "m2": unhealthy}, "m1", "m2"), nil,
			Decision{UnhealthySince: map[string]time.Time{"m1": now, "m2": now}}},
	} {
		if got := Decide(tc.b, tc.since, now); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

func TestEvict(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	created := metav1.NewTime(now)
	yes, grace, custom := true, DefaultGracePeriod, int32(60)
	two := int32(2)
	task := func(mode policyv1alpha1.PurgeMode, mutate func(*workv1alpha1.GracefulEvictionTask)) []workv1alpha1.GracefulEvictionTask {
		t := workv1alpha1.GracefulEvictionTask{FromCluster: "m2", Replicas: &two, Reason: Reason, Producer: Producer, PurgeMode: mode,
			CreationTimestamp: &created, Message: "the workload stayed unhealthy in m2 past the policy's tolerationSeconds"}
		mutate(&t)
		return []workv1alpha1.GracefulEvictionTask{t}
	}
	for _, tc := range []struct {
		name      string
		app       policyv1alpha1.ApplicationFailoverBehavior
		existing  []workv1alpha1.GracefulEvictionTask
		wantTasks []workv1alpha1.GracefulEvictionTask
	}{
		{"default: gracefully, 600s", policyv1alpha1.ApplicationFailoverBehavior{}, nil,
			task(policyv1alpha1.PurgeModeGracefully, func(t *workv1alpha1.GracefulEvictionTask) { t.GracePeriodSeconds = &grace })},
		{"gracefully with a grace period", policyv1alpha1.ApplicationFailoverBehavior{PurgeMode: policyv1alpha1.PurgeModeGracefully, GracePeriodSeconds: &custom}, nil,
			task(policyv1alpha1.PurgeModeGracefully, func(t *workv1alpha1.GracefulEvictionTask) { t.GracePeriodSeconds = &custom })},
		{"never: kept for a person", policyv1alpha1.ApplicationFailoverBehavior{PurgeMode: policyv1alpha1.PurgeModeNever}, nil,
			task(policyv1alpha1.PurgeModeNever, func(t *workv1alpha1.GracefulEvictionTask) { t.SuppressDeletion = &yes })},
		{"directly: no task", policyv1alpha1.ApplicationFailoverBehavior{PurgeMode: policyv1alpha1.PurgeModeDirectly}, nil, nil},
		{"a cluster with a task gets no second", policyv1alpha1.ApplicationFailoverBehavior{},
			[]workv1alpha1.GracefulEvictionTask{{FromCluster: "m2", Reason: "TaintUntolerated", Producer: "x"}},
			[]workv1alpha1.GracefulEvictionTask{{FromCluster: "m2", Reason: "TaintUntolerated", Producer: "x"}}},
	} {
		app := tc.app
		spec := workv1alpha1.ResourceBindingSpec{
			Failover:              &policyv1alpha1.FailoverBehavior{Application: &app},
			Clusters:              []workv1alpha1.TargetCluster{{Name: "m1", Replicas: 2}, {Name: "m2", Replicas: 2}},
			GracefulEvictionTasks: tc.existing,
		}
		Evict(&spec, []string{"m2"}, now)
		if want := []workv1alpha1.TargetCluster{{Name: "m1", Replicas: 2}}; !reflect.DeepEqual(spec.Clusters, want) {
			t.Errorf("%s: clusters %+v, want %+v", tc.name, spec.Clusters, want)
		}
		if !reflect.DeepEqual(spec.GracefulEvictionTasks, tc.wantTasks) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, spec.GracefulEvictionTasks, tc.wantTasks)
		}
	}
}
