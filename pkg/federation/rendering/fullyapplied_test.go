package rendering

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

func TestFullyApplied(t *testing.T) {
	work := func(cluster string, generation int64, conds ...metav1.Condition) workv1alpha1.Work {
		return workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Generation: generation}, Spec: workv1alpha1.WorkSpec{ClusterName: cluster},
			Status: workv1alpha1.WorkStatus{Conditions: conds}}
	}
	appliedAt := func(status metav1.ConditionStatus, gen int64, msg string) metav1.Condition {
		return metav1.Condition{Type: workv1alpha1.WorkApplied, Status: status, ObservedGeneration: gen, Reason: "R", Message: msg}
	}
	ok := func(cluster string) workv1alpha1.Work {
		return work(cluster, 2, appliedAt(metav1.ConditionTrue, 2, ""))
	}
	deleting := func(w workv1alpha1.Work) workv1alpha1.Work {
		w.DeletionTimestamp = ptr.To(metav1.Unix(1, 0))
		w.Finalizers = []string{"fedmesh.io/execution"}
		return w
	}
	two := []workv1alpha1.TargetCluster{{Name: "m1"}, {Name: "m2"}}
	three := []workv1alpha1.TargetCluster{{Name: "m1"}, {Name: "m2"}, {Name: "m3"}}
	scheduled := []metav1.Condition{{Type: workv1alpha1.ConditionScheduled, Status: metav1.ConditionFalse, Reason: "NoCluster"}}
	for _, tc := range []struct {
		name       string
		clusters   []workv1alpha1.TargetCluster
		conditions []metav1.Condition
		o          Outcome
		works      []workv1alpha1.Work
		status     metav1.ConditionStatus
		reason     string
		message    string
		waiting    bool
	}{
		{name: "all applied", clusters: two, works: []workv1alpha1.Work{ok("m1"), ok("m2")},
			status: "True", reason: ReasonFullyApplied, message: "applied in 2 cluster(s)"},
		{name: "applier without observed generation", clusters: two, works: []workv1alpha1.Work{ok("m1"), work("m2", 5, appliedAt("True", 0, ""))},
			status: "True", reason: ReasonFullyApplied, message: "applied in 2 cluster(s)"},
		{name: "a Work older than the binding stage left it (the cache lags)", clusters: two,
			o: Outcome{Works: map[string]int64{"m1": 2, "m2": 3}}, works: []workv1alpha1.Work{ok("m1"), ok("m2")},
			status: "False", reason: ReasonNotFullyApplied, waiting: true, message: "m2: the latest manifests are not applied yet"},
		{name: "not scheduled yet", status: "False", reason: ReasonNotScheduled, message: "the binding has no target clusters", waiting: true},
		{name: "no clusters, scheduled", conditions: scheduled, status: "False", reason: ReasonNotScheduled, message: "the binding has no target clusters"},
		{name: "template gone", clusters: two, o: Outcome{TemplateMissing: "template Deployment demo/web: not found"},
			status: "False", reason: ReasonTemplateNotFound, message: "template Deployment demo/web: not found"},
		{name: "conflict abort message shows, missing Work and stale apply too", clusters: three,
			works: []workv1alpha1.Work{
				work("m1", 1, appliedAt("False", 1, "Deployment demo/web exists in the member and is not managed by fedmesh: conflict resolution Abort")),
				work("m3", 3, appliedAt("True", 2, "")),
			},
			status: "False", reason: ReasonNotFullyApplied,
			message: "m1: not applied: Deployment demo/web exists in the member and is not managed by fedmesh: conflict resolution Abort; m2: no Work yet; m3: the latest manifests are not applied yet"},
		{name: "failed, reason only", clusters: []workv1alpha1.TargetCluster{{Name: "m1"}}, works: []workv1alpha1.Work{work("m1", 1, appliedAt("False", 1, ""))},
			status: "False", reason: ReasonNotFullyApplied, message: "m1: not applied: R"},
		{name: "Works on their way", clusters: three, works: []workv1alpha1.Work{ok("m1"), work("m3", 3, appliedAt("True", 2, "")), work("m2", 1)},
			status: "False", reason: ReasonNotFullyApplied, waiting: true,
			message: "m2: not applied yet; m3: the latest manifests are not applied yet"},
		{name: "a Work not yet made, with a dependency missing", clusters: two,
			o: Outcome{MissingDeps: []string{"Secret demo/s"}}, works: []workv1alpha1.Work{ok("m1")},
			status: "False", reason: ReasonDependencyNotFound, message: "dependencies not found: Secret demo/s; m2: no Work yet"},
		{name: "invalid policy wins over a failed override and a missing dependency", clusters: two,
			o: Outcome{Failed: []Failure{{Cluster: "m1", Message: "OverridePolicy/p: /spec/x: not found"},
				{Cluster: "m2", Message: "OverridePolicy/bad is invalid: remove must not have a value", InvalidPolicy: true}},
				MissingDeps: []string{"ConfigMap demo/conf"}},
			status: "False", reason: ReasonInvalidOverridePolicy,
			message: "m1: OverridePolicy/p: /spec/x: not found (its previous Work is kept); m2: OverridePolicy/bad is invalid: remove must not have a value (its previous Work is kept); dependencies not found: ConfigMap demo/conf"},
		{name: "a failed render keeps the cluster's previous Work out of the judgement", clusters: two,
			o:     Outcome{Failed: []Failure{{Cluster: "m2", Message: "OverridePolicy/p: /spec/x: not found"}}},
			works: []workv1alpha1.Work{ok("m1")}, status: "False", reason: ReasonRenderFailed,
			message: "m2: OverridePolicy/p: /spec/x: not found (its previous Work is kept)"},
		{name: "a cluster newly targeted has no Work to keep", clusters: two,
			o:     Outcome{Failed: []Failure{{Cluster: "m2", Message: "OverridePolicy/p: /spec/x: not found", NoWork: true}}},
			works: []workv1alpha1.Work{ok("m1")}, status: "False", reason: ReasonRenderFailed,
			message: "m2: OverridePolicy/p: /spec/x: not found (it has no Work yet)"},
		{name: "a cluster being deleted keeps no Work", clusters: two,
			o:     Outcome{Failed: []Failure{{Cluster: "m2", Message: "cluster m2 is being deleted; its Work goes", Leaving: true}}},
			works: []workv1alpha1.Work{ok("m1")}, status: "False", reason: ReasonRenderFailed,
			message: "m2: cluster m2 is being deleted; its Work goes"},
		{name: "an applied Work being deleted is not the cluster's current Work", clusters: two,
			works: []workv1alpha1.Work{ok("m1"), deleting(ok("m2"))}, status: "False", reason: ReasonNotFullyApplied, waiting: true,
			message: "m2: its previous Work is being deleted; a new one follows once it is gone"},
		{name: "nor when the binding stage left it at its generation", clusters: two,
			o: Outcome{Works: map[string]int64{"m1": 2, "m2": 2}}, works: []workv1alpha1.Work{deleting(ok("m2")), ok("m1")},
			status: "False", reason: ReasonNotFullyApplied, waiting: true,
			message: "m2: its previous Work is being deleted; a new one follows once it is gone"},
		{name: "a failed Work being deleted waits for its successor too", clusters: []workv1alpha1.TargetCluster{{Name: "m1"}},
			works: []workv1alpha1.Work{deleting(work("m1", 1, appliedAt("False", 1, "unreachable")))}, status: "False", reason: ReasonNotFullyApplied, waiting: true,
			message: "m1: its previous Work is being deleted; a new one follows once it is gone"},
		{name: "missing dependency", clusters: two, o: Outcome{MissingDeps: []string{"Secret demo/s"}}, works: []workv1alpha1.Work{ok("m1"), ok("m2")},
			status: "False", reason: ReasonDependencyNotFound, message: "dependencies not found: Secret demo/s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Generation: 7}, Spec: workv1alpha1.ResourceBindingSpec{Clusters: tc.clusters}}
			b.Status.Conditions = tc.conditions
			c, waiting := FullyApplied(b, tc.o, tc.works)
			if c.Type != workv1alpha1.ConditionFullyApplied || c.Status != tc.status || c.Reason != tc.reason || c.Message != tc.message || c.ObservedGeneration != 7 {
				t.Errorf("got %s=%s %s %q (generation %d)\nwant %s %s %q", c.Type, c.Status, c.Reason, c.Message, c.ObservedGeneration, tc.status, tc.reason, tc.message)
			}
			if waiting != tc.waiting {
				t.Errorf("waiting %v, want %v", waiting, tc.waiting)
			}
			// What the binding stage reports as an event is the same problem, without the clusters yet to apply.
			if reason, _ := tc.o.Problem(b); reason != "" && reason != tc.reason {
				t.Errorf("Problem reason %q, want %q", reason, tc.reason)
			}
		})
	}
}
