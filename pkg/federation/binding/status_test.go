package binding

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/override"
)

func TestFullyApplied(t *testing.T) {
	work := func(generation int64, conds ...metav1.Condition) *workv1alpha1.Work {
		return &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Generation: generation}, Status: workv1alpha1.WorkStatus{Conditions: conds}}
	}
	appliedAt := func(status metav1.ConditionStatus, gen int64, msg string) metav1.Condition {
		return metav1.Condition{Type: workv1alpha1.WorkApplied, Status: status, ObservedGeneration: gen, Reason: "R", Message: msg}
	}
	ok := work(2, appliedAt(metav1.ConditionTrue, 2, ""))
	invalid := &override.PolicyError{Policy: "OverridePolicy/bad", Invalid: true, Err: fmt.Errorf("remove must not have a value")}
	failed := &override.PolicyError{Policy: "OverridePolicy/p", Err: fmt.Errorf("/spec/x: not found")}
	two := []workv1alpha1.TargetCluster{{Name: "m1"}, {Name: "m2"}}
	for _, tc := range []struct {
		name     string
		clusters []workv1alpha1.TargetCluster
		o        outcome
		status   metav1.ConditionStatus
		reason   string
		message  string
		waiting  bool
	}{
		{name: "all applied", clusters: two, o: outcome{works: map[string]*workv1alpha1.Work{"m1": ok, "m2": ok}},
			status: "True", reason: ReasonFullyApplied, message: "applied in 2 cluster(s)"},
		{name: "applier without observed generation", clusters: two, o: outcome{works: map[string]*workv1alpha1.Work{"m1": ok, "m2": work(5, appliedAt("True", 0, ""))}},
			status: "True", reason: ReasonFullyApplied, message: "applied in 2 cluster(s)"},
		{name: "no clusters", o: outcome{}, status: "False", reason: ReasonNotScheduled, message: "the binding has no target clusters"},
		{name: "template gone", clusters: two, o: outcome{templateMissing: "template Deployment demo/web: not found"},
			status: "False", reason: ReasonTemplateNotFound, message: "template Deployment demo/web: not found"},
		{name: "conflict abort message shows, missing Work and stale apply too", clusters: []workv1alpha1.TargetCluster{{Name: "m1"}, {Name: "m2"}, {Name: "m3"}},
			o: outcome{works: map[string]*workv1alpha1.Work{
				"m1": work(1, appliedAt("False", 1, "Deployment demo/web exists in the member and is not managed by fedmesh: conflict resolution Abort")),
				"m3": work(3, appliedAt("True", 2, "")),
			}},
			status: "False", reason: ReasonNotFullyApplied,
			message: "m1: not applied: Deployment demo/web exists in the member and is not managed by fedmesh: conflict resolution Abort; m2: no Work yet; m3: the latest manifests are not applied yet"},
		{name: "Works on their way", clusters: []workv1alpha1.TargetCluster{{Name: "m1"}, {Name: "m2"}, {Name: "m3"}},
			o:      outcome{works: map[string]*workv1alpha1.Work{"m1": ok, "m3": work(3, appliedAt("True", 2, ""))}},
			status: "False", reason: ReasonNotFullyApplied, waiting: true,
			message: "m2: no Work yet; m3: the latest manifests are not applied yet"},
		{name: "a Work not yet made, with a dependency missing", clusters: two,
			o:      outcome{works: map[string]*workv1alpha1.Work{"m1": ok}, missingDeps: []string{"Secret demo/s"}},
			status: "False", reason: ReasonDependencyNotFound, message: "dependencies not found: Secret demo/s; m2: no Work yet"},
		{name: "invalid policy wins over a failed override and a missing dependency", clusters: two,
			o:      outcome{renderErrors: map[string]error{"m1": failed, "m2": invalid}, missingDeps: []string{"ConfigMap demo/conf"}},
			status: "False", reason: ReasonInvalidOverridePolicy,
			message: "m1: OverridePolicy/p: /spec/x: not found (its previous Work is kept); m2: OverridePolicy/bad is invalid: remove must not have a value (its previous Work is kept); dependencies not found: ConfigMap demo/conf"},
		{name: "missing dependency", clusters: two, o: outcome{missingDeps: []string{"Secret demo/s"}, works: map[string]*workv1alpha1.Work{"m1": ok, "m2": ok}},
			status: "False", reason: ReasonDependencyNotFound, message: "dependencies not found: Secret demo/s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Generation: 7}, Spec: workv1alpha1.ResourceBindingSpec{Clusters: tc.clusters}}
			c, waiting := fullyApplied(b, tc.o)
			if c.Type != workv1alpha1.ConditionFullyApplied || c.Status != tc.status || c.Reason != tc.reason || c.Message != tc.message || c.ObservedGeneration != 7 {
				t.Errorf("got %s=%s %s %q (generation %d)\nwant %s %s %q", c.Type, c.Status, c.Reason, c.Message, c.ObservedGeneration, tc.status, tc.reason, tc.message)
			}
			if waiting != tc.waiting {
				t.Errorf("waiting %v, want %v", waiting, tc.waiting)
			}
		})
	}
}
