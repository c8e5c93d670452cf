package scheduling

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/scheduler"
)

func TestApplyStatus(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	ok := decision{result: scheduler.Result{Clusters: []workv1alpha1.TargetCluster{{Name: "a"}}}, observed: 3}

	var status workv1alpha1.ResourceBindingStatus
	if !applyStatus(&status, ok, true, t0) {
		t.Fatal("first scheduling changed nothing")
	}
	if status.SchedulerObservedGeneration != 3 || !status.LastScheduledTime.Equal(&t0) ||
		!meta.IsStatusConditionTrue(status.Conditions, workv1alpha1.ConditionScheduled) {
		t.Fatalf("status after scheduling: %+v", status)
	}
	if applyStatus(&status, ok, false, t1) {
		t.Errorf("the same decision again changed the status: %+v", status)
	}
	if !status.LastScheduledTime.Equal(&t0) {
		t.Errorf("lastScheduledTime moved without a scheduling: %v", status.LastScheduledTime)
	}

	status.Conditions = append(status.Conditions, metav1.Condition{Type: workv1alpha1.ConditionFullyApplied, Status: metav1.ConditionTrue, Reason: "Applied"})
	failed := decision{err: errors.New("no cluster fits"), observed: 4}
	if !applyStatus(&status, failed, false, t1) {
		t.Fatal("a failure changed nothing")
	}
	cond := meta.FindStatusCondition(status.Conditions, workv1alpha1.ConditionScheduled)
	if cond.Status != metav1.ConditionFalse || cond.Reason != ReasonUnschedulable || cond.Message != "no cluster fits" {
		t.Errorf("condition after a failure: %+v", cond)
	}
	if status.SchedulerObservedGeneration != 3 {
		t.Errorf("a failed generation counted as observed: %d", status.SchedulerObservedGeneration)
	}
	if !meta.IsStatusConditionTrue(status.Conditions, workv1alpha1.ConditionFullyApplied) {
		t.Errorf("another controller's condition was touched: %+v", status.Conditions)
	}
	if applyStatus(&status, failed, false, t1) {
		t.Error("the same failure again changed the status")
	}
	long := decision{err: errors.New(strings.Repeat("x", 2*maxMessage))}
	applyStatus(&status, long, false, t1)
	if n := len(meta.FindStatusCondition(status.Conditions, workv1alpha1.ConditionScheduled).Message); n != maxMessage {
		t.Errorf("a long failure message is %d bytes, want %d", n, maxMessage)
	}
}

func TestDecideReschedule(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clusters := []clusterv1alpha1.Cluster{readyCluster("a"), readyCluster("b")}
	spec := &workv1alpha1.ResourceBindingSpec{Clusters: []workv1alpha1.TargetCluster{{Name: "a"}}}
	scheduled := metav1.NewTime(now.Add(-time.Hour))
	status := &workv1alpha1.ResourceBindingStatus{LastScheduledTime: &scheduled}

	// Duplicated with no replicas: both clusters, whatever the previous result.
	d := decide(spec, status, memory{}, clusters, now, 0)
	if d.err != nil || len(d.result.Clusters) != 2 || d.fresh {
		t.Fatalf("decision %+v", d)
	}
	// A reschedule asked for after the last scheduling starts afresh; one asked for before does not.
	before := metav1.NewTime(now.Add(-2 * time.Hour))
	spec.RescheduleTriggeredAt = &before
	if d := decide(spec, status, memory{}, clusters, now, 0); d.fresh {
		t.Error("an old reschedule request was honoured again")
	}
	after := metav1.NewTime(now.Add(-time.Minute))
	spec.RescheduleTriggeredAt = &after
	if d := decide(spec, status, memory{}, clusters, now, 0); !d.fresh {
		t.Error("a new reschedule request was ignored")
	}
}

// Application failover leaves a cluster where the workload stayed unhealthy only for a cluster where it is not
// unhealthy too; otherwise it stays, and looks again in a while.
func TestDecideApplicationFailover(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clusters := []clusterv1alpha1.Cluster{readyCluster("a"), readyCluster("b"), readyCluster("c")}
	one := int32(1)
	spec := &workv1alpha1.ResourceBindingSpec{
		Replicas: 6,
		Clusters: []workv1alpha1.TargetCluster{{Name: "a", Replicas: 2}, {Name: "b", Replicas: 2}, {Name: "c", Replicas: 2}},
		Failover: &policyv1alpha1.FailoverBehavior{Application: &policyv1alpha1.ApplicationFailoverBehavior{
			DecisionConditions: policyv1alpha1.DecisionConditions{TolerationSeconds: &one}}},
		Placement: &policyv1alpha1.Placement{ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
			ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided}},
	}
	health := func(kv ...string) *workv1alpha1.ResourceBindingStatus {
		st := &workv1alpha1.ResourceBindingStatus{}
		for i := 0; i < len(kv); i += 2 {
			st.AggregatedStatus = append(st.AggregatedStatus, workv1alpha1.AggregatedStatusItem{ClusterName: kv[i], Health: workv1alpha1.ResourceHealth(kv[i+1])})
		}
		return st
	}
	since := map[string]time.Time{"a": now.Add(-2 * time.Second)}

	// a past its toleration, b unhealthy within it, c healthy: a is left; b keeps its share for now.
	d := decide(spec, health("a", "Unhealthy", "b", "Unhealthy", "c", "Healthy"), memory{settled: true, unhealthySince: since}, clusters, now, 0)
	if d.err != nil || !slices.Equal(d.appEvicted, []string{"a"}) || len(d.stayed) > 0 {
		t.Fatalf("decision %+v", d)
	}
	if want := []workv1alpha1.TargetCluster{{Name: "b", Replicas: 3}, {Name: "c", Replicas: 3}}; !slices.Equal(d.result.Clusters, want) {
		t.Errorf("clusters %v, want %v", d.result.Clusters, want)
	}
	if !d.unhealthySince["b"].Equal(now) {
		t.Errorf("b's count not started: %v", d.unhealthySince)
	}

	// Unhealthy everywhere: nowhere better to go, so it stays, and looks again in a while.
	d = decide(spec, health("a", "Unhealthy", "b", "Unhealthy", "c", "Unhealthy"), memory{settled: true, unhealthySince: since}, clusters, now, 0)
	if d.err != nil || len(d.appEvicted) > 0 || !slices.Equal(d.stayed, []string{"a"}) || !slices.Equal(d.result.Clusters, spec.Clusters) {
		t.Fatalf("decision %+v", d)
	}
	if d.recheck == 0 || d.recheck > failoverRetry {
		t.Errorf("recheck %v, want at most %v", d.recheck, failoverRetry)
	}
}

// readyCluster is a Cluster called name whose Ready condition is True.
func readyCluster(name string) clusterv1alpha1.Cluster {
	c := clusterv1alpha1.Cluster{}
	c.Name = name
	c.Status.Conditions = []metav1.Condition{{Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionTrue}}
	return c
}

// A duplicated workload is moved by application failover only to a cluster it is not on yet, and, with
// statePreservation, only with its state picked from its status where it was.
func TestDecideStatefulFailover(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clusters := []clusterv1alpha1.Cluster{readyCluster("a"), readyCluster("b"), readyCluster("c")}
	one := int32(1)
	since := map[string]time.Time{"a": now.Add(-2 * time.Second)}
	failover := &policyv1alpha1.FailoverBehavior{Application: &policyv1alpha1.ApplicationFailoverBehavior{
		DecisionConditions: policyv1alpha1.DecisionConditions{TolerationSeconds: &one},
		PurgeMode:          policyv1alpha1.PurgeModeDirectly,
		StatePreservation: &policyv1alpha1.StatePreservation{Rules: []policyv1alpha1.StatePreservationRule{
			{AliasLabelName: "example.io/job", JSONPath: "{ .job }"}}},
	}}
	unhealthyOnA := func(status string) *workv1alpha1.ResourceBindingStatus {
		return &workv1alpha1.ResourceBindingStatus{AggregatedStatus: []workv1alpha1.AggregatedStatusItem{{ClusterName: "a",
			Health: workv1alpha1.ResourceUnhealthy, Status: &runtime.RawExtension{Raw: []byte(status)}}}}
	}
	oneCluster := &workv1alpha1.ResourceBindingSpec{
		Replicas: 1, Clusters: []workv1alpha1.TargetCluster{{Name: "a", Replicas: 1}}, Failover: failover,
		Placement: &policyv1alpha1.Placement{SpreadConstraints: []policyv1alpha1.SpreadConstraint{
			{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MinGroups: 1, MaxGroups: 1}}},
	}

	// On one cluster of three: it moves to the next, its state with it.
	d := decide(oneCluster, unhealthyOnA(`{"job":"j7"}`), memory{settled: true, unhealthySince: since}, clusters, now, 0)
	if d.err != nil || !slices.Equal(d.appEvicted, []string{"a"}) || len(d.unpreserved) > 0 {
		t.Fatalf("decision %+v", d)
	}
	if want := []workv1alpha1.TargetCluster{{Name: "b", Replicas: 1}}; !slices.Equal(d.result.Clusters, want) {
		t.Errorf("clusters %v, want %v", d.result.Clusters, want)
	}
	if want := map[string]map[string]string{"a": {"example.io/job": "j7"}}; !reflect.DeepEqual(d.preserved, want) {
		t.Errorf("preserved %v, want %v", d.preserved, want)
	}

	// The state cannot be picked: it stays, says why, and looks again in a while.
	d = decide(oneCluster, unhealthyOnA(`{"checkpoint":3}`), memory{settled: true, unhealthySince: since}, clusters, now, 0)
	if d.err != nil || len(d.appEvicted) > 0 || !slices.Equal(d.result.Clusters, oneCluster.Clusters) ||
		!strings.Contains(d.unpreserved["a"], "job is not found") {
		t.Fatalf("decision %+v", d)
	}
	if d.recheck == 0 || d.recheck > failoverRetry {
		t.Errorf("recheck %v, want at most %v", d.recheck, failoverRetry)
	}

	// Already on every cluster it may be: leaving would only take a copy away; it stays.
	everywhere := oneCluster.DeepCopy()
	everywhere.Placement = nil
	everywhere.Clusters = []workv1alpha1.TargetCluster{{Name: "a", Replicas: 1}, {Name: "b", Replicas: 1}, {Name: "c", Replicas: 1}}
	d = decide(everywhere, unhealthyOnA(`{"job":"j7"}`), memory{settled: true, unhealthySince: since}, clusters, now, 0)
	if d.err != nil || len(d.appEvicted) > 0 || !slices.Equal(d.stayed, []string{"a"}) || len(d.preserved) > 0 ||
		!slices.Equal(d.result.Clusters, everywhere.Clusters) {
		t.Fatalf("decision %+v", d)
	}

	// Already everywhere, with a rule that finds nothing: it stays for want of somewhere to go, not for its state.
	d = decide(everywhere, unhealthyOnA(`{"checkpoint":3}`), memory{settled: true, unhealthySince: since}, clusters, now, 0)
	if d.err != nil || !slices.Equal(d.stayed, []string{"a"}) || len(d.unpreserved) > 0 {
		t.Fatalf("decision %+v", d)
	}

	// a fails too (not ready, tainted past the tolerations): cluster failover leaves it, state or not.
	failed := []clusterv1alpha1.Cluster{readyCluster("a"), readyCluster("b")}
	failed[0].Status.Conditions[0].Status = metav1.ConditionFalse
	failed[0].Spec.Taints = []corev1.Taint{{Key: scheduler.NotReadyTaintKey, Effect: corev1.TaintEffectNoExecute,
		TimeAdded: &metav1.Time{Time: now.Add(-time.Hour)}}}
	d = decide(oneCluster, unhealthyOnA(`{"checkpoint":3}`), memory{settled: true, unhealthySince: since}, failed, now, 0)
	if d.err != nil || !slices.Equal(d.evicted, []string{"a"}) || len(d.appEvicted) > 0 || len(d.unpreserved) > 0 ||
		!slices.Equal(d.result.Clusters, []workv1alpha1.TargetCluster{{Name: "b", Replicas: 1}}) {
		t.Fatalf("decision %+v", d)
	}
	// Cluster failover's own statePreservation: the state recorded from a while it was ready goes along ...
	clusterFailover := oneCluster.DeepCopy()
	clusterFailover.Failover = &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{
		PurgeMode: policyv1alpha1.PurgeModeDirectly, StatePreservation: failover.Application.StatePreservation}}
	recorded := map[string]map[string]string{"a": {"example.io/job": "j9"}}
	d = decide(clusterFailover, &workv1alpha1.ResourceBindingStatus{}, memory{settled: true, recorded: recorded}, failed, now, 0)
	if d.err != nil || !slices.Equal(d.evicted, []string{"a"}) || !reflect.DeepEqual(d.preserved, recorded) ||
		!reflect.DeepEqual(d.recorded, recorded) || len(d.unpreserved) > 0 {
		t.Fatalf("decision %+v", d)
	}
	// ... and without any, it stays, saying why.
	d = decide(clusterFailover, &workv1alpha1.ResourceBindingStatus{}, memory{settled: true}, failed, now, 0)
	if d.err != nil || len(d.evicted) > 0 || !slices.Equal(d.result.Clusters, oneCluster.Clusters) ||
		d.unpreserved["a"] != "no state was recorded from its status while the cluster was ready" {
		t.Fatalf("decision %+v", d)
	}
}

// TestScheduledFor: the recorded placement is compared by what its JSON says, so a field written empty by another
// version, or one this version does not know, does not unsettle every binding.
func TestScheduledFor(t *testing.T) {
	p := &policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1"}}}
	for _, tc := range []struct {
		name      string
		recorded  string
		placement *policyv1alpha1.Placement
		want      bool
	}{
		{"as this version writes it", placementText(p), p, true},
		{"keys in another order, an empty field written out", `{"spreadConstraints":null,"clusterAffinity":{"clusterNames":["member1"]}}`, p, true},
		{"a field this version does not know", `{"clusterAffinity":{"clusterNames":["member1"]},"futureField":{}}`, p, true},
		{"another placement", `{"clusterAffinity":{"clusterNames":["member2"]}}`, p, false},
		{"none recorded", "", p, false},
		{"unreadable", "unrecorded: error", p, false},
		{"no placement, recorded as such", "null", nil, true},
	} {
		if got := scheduledFor(tc.recorded, tc.placement); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
