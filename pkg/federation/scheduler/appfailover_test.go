package scheduler

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

func TestApplicationFailover(t *testing.T) {
	ten := int32(10)
	app := &policyv1alpha1.FailoverBehavior{Application: &policyv1alpha1.ApplicationFailoverBehavior{
		DecisionConditions: policyv1alpha1.DecisionConditions{TolerationSeconds: &ten}}}
	status := func(kv ...string) []workv1alpha1.AggregatedStatusItem {
		var out []workv1alpha1.AggregatedStatusItem
		for i := 0; i < len(kv); i += 2 {
			out = append(out, workv1alpha1.AggregatedStatusItem{ClusterName: kv[i], Health: workv1alpha1.ResourceHealth(kv[i+1])})
		}
		return out
	}
	ab := targets("a", 2, "b", 2)
	for _, tc := range []struct {
		name string
		in   AppFailoverInput
		want AppFailoverDecision
	}{
		{name: "no application failover", in: AppFailoverInput{Failover: &policyv1alpha1.FailoverBehavior{}, Targets: ab,
			Status: status("a", "Unhealthy"), Now: now}},
		{name: "first seen unhealthy: the count starts", in: AppFailoverInput{Failover: app, Targets: ab,
			Status: status("a", "Unhealthy", "b", "Healthy"), Now: now},
			want: AppFailoverDecision{UnhealthySince: map[string]time.Time{"a": now}, RecheckAfter: 10 * time.Second}},
		{name: "unhealthy past the toleration: evicted", in: AppFailoverInput{Failover: app, Targets: ab,
			Status: status("a", "Unhealthy"), UnhealthySince: map[string]time.Time{"a": now.Add(-10 * time.Second)}, Now: now},
			want: AppFailoverDecision{Evict: []string{"a"}, UnhealthySince: map[string]time.Time{"a": now.Add(-10 * time.Second)}}},
		{name: "healthy again: the count is forgotten", in: AppFailoverInput{Failover: app, Targets: ab,
			Status: status("a", "Healthy"), UnhealthySince: map[string]time.Time{"a": now.Add(-time.Hour)}, Now: now}},
		{name: "Unknown is no verdict", in: AppFailoverInput{Failover: app, Targets: ab,
			Status: status("a", "Unknown"), UnhealthySince: map[string]time.Time{"a": now.Add(-time.Hour)}, Now: now}},
		{name: "a cluster no longer a target is not looked at", in: AppFailoverInput{Failover: app, Targets: targets("b", 4),
			Status: status("a", "Unhealthy"), UnhealthySince: map[string]time.Time{"a": now.Add(-time.Hour)}, Now: now}},
		{name: "default toleration 300s", in: AppFailoverInput{Failover: &policyv1alpha1.FailoverBehavior{Application: &policyv1alpha1.ApplicationFailoverBehavior{}},
			Targets: ab, Status: status("b", "Unhealthy"), UnhealthySince: map[string]time.Time{"b": now.Add(-time.Minute)}, Now: now},
			want: AppFailoverDecision{UnhealthySince: map[string]time.Time{"b": now.Add(-time.Minute)}, RecheckAfter: 4 * time.Minute}},
	} {
		got := ApplicationFailover(tc.in)
		if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestApplicationEvictedAndKeepsCopy(t *testing.T) {
	tasks := []workv1alpha1.GracefulEvictionTask{
		{FromCluster: "a", Reason: EvictionReason, PurgeMode: policyv1alpha1.PurgeModeGracefully},
		{FromCluster: "b", Reason: ApplicationFailureReason, PurgeMode: policyv1alpha1.PurgeModeDirectly},
		{FromCluster: "c", Reason: ApplicationFailureReason, PurgeMode: policyv1alpha1.PurgeModeNever},
	}
	if got := ApplicationEvicted(tasks); !cmp.Equal(got, []string{"b", "c"}) {
		t.Errorf("ApplicationEvicted: %v", got)
	}
	for i, want := range []bool{true, false, true} {
		if got := KeepsCopy(tasks[i]); got != want {
			t.Errorf("KeepsCopy(%s): %v, want %v", tasks[i].FromCluster, got, want)
		}
	}
}
