package scheduler

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

func TestStatePreservation(t *testing.T) {
	sp := &policyv1alpha1.StatePreservation{Rules: []policyv1alpha1.StatePreservationRule{{AliasLabelName: "a", JSONPath: "{.a}"}}}
	app := &policyv1alpha1.FailoverBehavior{Application: &policyv1alpha1.ApplicationFailoverBehavior{StatePreservation: sp,
		PurgeMode: policyv1alpha1.PurgeModeDirectly}}
	cluster := &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{StatePreservation: sp,
		PurgeMode: policyv1alpha1.PurgeModeImmediately}}
	gracefully := &policyv1alpha1.FailoverBehavior{
		Application: &policyv1alpha1.ApplicationFailoverBehavior{StatePreservation: sp, PurgeMode: policyv1alpha1.PurgeModeGracefully},
		Cluster:     &policyv1alpha1.ClusterFailoverBehavior{StatePreservation: sp}}
	for _, tc := range []struct {
		name   string
		f      *policyv1alpha1.FailoverBehavior
		reason string
		want   *policyv1alpha1.StatePreservation
	}{
		{name: "no failover", reason: EvictionReason},
		{name: "application failover's", f: app, reason: ApplicationFailureReason, want: sp},
		{name: "not cluster failover's", f: app, reason: EvictionReason},
		{name: "cluster failover's", f: cluster, reason: EvictionReason, want: sp},
		{name: "not application failover's", f: cluster, reason: ApplicationFailureReason},
		{name: "the old copy kept: the state would never reach the new one", f: gracefully, reason: ApplicationFailureReason},
		{name: "cluster failover's default purge mode keeps the copy too", f: gracefully, reason: EvictionReason},
	} {
		if got := StatePreservation(tc.f, tc.reason); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRecordState(t *testing.T) {
	sp := &policyv1alpha1.StatePreservation{Rules: []policyv1alpha1.StatePreservationRule{{AliasLabelName: "example.io/job", JSONPath: "{.job}"}}}
	item := func(cluster, status string) workv1alpha1.AggregatedStatusItem {
		it := workv1alpha1.AggregatedStatusItem{ClusterName: cluster}
		if status != "" {
			it.Status = &runtime.RawExtension{Raw: []byte(status)}
		}
		return it
	}
	job := func(id string) map[string]string { return map[string]string{"example.io/job": id} }
	for _, tc := range []struct {
		name     string
		sp       *policyv1alpha1.StatePreservation
		targets  []workv1alpha1.TargetCluster
		items    []workv1alpha1.AggregatedStatusItem
		recorded map[string]map[string]string
		want     map[string]map[string]string
	}{
		{name: "no statePreservation", targets: targets("a", 1), items: []workv1alpha1.AggregatedStatusItem{item("a", `{"job":"j1"}`)}},
		{name: "from each target's status", sp: sp, targets: targets("a", 1, "b", 1),
			items: []workv1alpha1.AggregatedStatusItem{item("a", `{"job":"j1"}`), item("b", `{"job":"j2"}`)},
			want:  map[string]map[string]string{"a": job("j1"), "b": job("j2")}},
		{name: "a cluster that reports nothing keeps what it had", sp: sp, targets: targets("a", 1, "b", 1),
			items: []workv1alpha1.AggregatedStatusItem{item("a", "")}, recorded: map[string]map[string]string{"a": job("j0"), "b": job("j9")},
			want: map[string]map[string]string{"a": job("j0"), "b": job("j9")}},
		{name: "a new value replaces the old", sp: sp, targets: targets("a", 1),
			items: []workv1alpha1.AggregatedStatusItem{item("a", `{"job":"j3"}`)}, recorded: map[string]map[string]string{"a": job("j0")},
			want: map[string]map[string]string{"a": job("j3")}},
		{name: "a status without the value keeps the last one", sp: sp, targets: targets("a", 1, "b", 1),
			items:    []workv1alpha1.AggregatedStatusItem{item("a", `{"other":1}`), item("b", `{"other":1}`)},
			recorded: map[string]map[string]string{"a": job("j0")}, want: map[string]map[string]string{"a": job("j0")}},
		{name: "a cluster no longer a target is dropped", sp: sp, targets: targets("b", 1),
			recorded: map[string]map[string]string{"a": job("j0")}, want: map[string]map[string]string{}},
	} {
		if got := RecordState(tc.sp, tc.targets, tc.items, tc.recorded); !cmp.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestPreservedLabelState(t *testing.T) {
	rules := func(kv ...string) *policyv1alpha1.StatePreservation {
		sp := &policyv1alpha1.StatePreservation{}
		for i := 0; i < len(kv); i += 2 {
			sp.Rules = append(sp.Rules, policyv1alpha1.StatePreservationRule{AliasLabelName: kv[i], JSONPath: kv[i+1]})
		}
		return sp
	}
	raw := func(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }
	for _, tc := range []struct {
		name    string
		sp      *policyv1alpha1.StatePreservation
		status  *runtime.RawExtension
		want    map[string]string
		wantErr string
	}{
		{name: "no rules: nothing to preserve", status: raw(`{}`)},
		{name: "string and number", sp: rules("example.io/job", "{ .jobStatus.jobID }", "example.io/checkpoint", "{.checkpoint}"),
			status: raw(`{"jobStatus":{"jobID":"a1b2"},"checkpoint":1152921504606846977}`),
			want:   map[string]string{"example.io/job": "a1b2", "example.io/checkpoint": "1152921504606846977"}},
		{name: "status not collected", sp: rules("x", "{.a}"), wantErr: "no status collected"},
		{name: "missing key", sp: rules("x", "{.a}"), status: raw(`{"b":1}`), wantErr: "rule x: jsonPath \"{.a}\": a is not found"},
		{name: "bad path", sp: rules("x", "{.a"), status: raw(`{"a":1}`), wantErr: "rule x: jsonPath \"{.a\""},
		{name: "not a label value", sp: rules("x", "{.a}"), status: raw(`{"a":"has spaces"}`), wantErr: `rule x: "has spaces" is no label value`},
		{name: "an object is not a label value", sp: rules("x", "{.a}"), status: raw(`{"a":{"b":1}}`), wantErr: "is no label value"},
	} {
		got, err := PreservedLabelState(tc.sp, tc.status)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: error %v, want one with %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestPreservedLabels(t *testing.T) {
	state := map[string]string{"example.io/job": "a1b2"}
	task := func(mode policyv1alpha1.PurgeMode, before ...string) workv1alpha1.GracefulEvictionTask {
		return workv1alpha1.GracefulEvictionTask{FromCluster: "m1", Reason: ApplicationFailureReason, PurgeMode: mode,
			PreservedLabelState: state, ClustersBeforeFailover: before}
	}
	spec := func(clusters []workv1alpha1.TargetCluster, tasks ...workv1alpha1.GracefulEvictionTask) *workv1alpha1.ResourceBindingSpec {
		return &workv1alpha1.ResourceBindingSpec{Clusters: clusters, GracefulEvictionTasks: tasks}
	}
	for _, tc := range []struct {
		name    string
		spec    *workv1alpha1.ResourceBindingSpec
		cluster string
		want    map[string]string
	}{
		{name: "moved to m2, old copy deleted at once", spec: spec(targets("m2", 1), task(policyv1alpha1.PurgeModeDirectly, "m1")), cluster: "m2", want: state},
		{name: "Immediately, the older name", spec: spec(targets("m2", 1), task(policyv1alpha1.PurgeModeImmediately, "m1")), cluster: "m2", want: state},
		{name: "no task", spec: spec(targets("m2", 1)), cluster: "m2"},
		{name: "old copy kept: both would run", spec: spec(targets("m2", 1), task(policyv1alpha1.PurgeModeGracefully, "m1")), cluster: "m2"},
		{name: "on several clusters", spec: spec(targets("m2", 1, "m3", 1), task(policyv1alpha1.PurgeModeDirectly, "m1")), cluster: "m2"},
		{name: "was there before the failover", spec: spec(targets("m2", 1), task(policyv1alpha1.PurgeModeDirectly, "m1", "m2")), cluster: "m2"},
		{name: "another cluster's Work", spec: spec(targets("m2", 1), task(policyv1alpha1.PurgeModeDirectly, "m1")), cluster: "m1"},
		{name: "the last task counts", spec: spec(targets("m3", 1), task(policyv1alpha1.PurgeModeDirectly, "m1"),
			workv1alpha1.GracefulEvictionTask{FromCluster: "m2", PurgeMode: policyv1alpha1.PurgeModeDirectly, ClustersBeforeFailover: []string{"m2"}}),
			cluster: "m3"},
	} {
		if got := PreservedLabels(tc.spec, tc.cluster); !cmp.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
