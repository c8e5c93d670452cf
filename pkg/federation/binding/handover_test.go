package binding

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/override"
	"github.com/fedmesh/fedmesh/pkg/federation/rendering"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// TestProblemEventsAfterRestart: the first pass of a federator just started (an empty Renderings store) over a
// binding whose FullyApplied already tells of the problem it finds records no event: the problem is not new, and
// every standing one would otherwise be told again at each restart. A problem the condition does not tell of, or
// tells of otherwise, is an event.
func TestProblemEventsAfterRestart(t *testing.T) {
	missing := outcome{missingDeps: []string{"ConfigMap shop/missing"}}
	invalid := outcome{renderErrors: map[string]error{
		"m1": &override.PolicyError{Policy: "OverridePolicy/bad", Invalid: true, Err: errors.New("remove must not have a value")}},
		works: map[string]*workv1alpha1.Work{"m1": {}}}
	const invalidMsg = "m1: OverridePolicy/bad is invalid: remove must not have a value (its previous Work is kept)"
	for _, tc := range []struct {
		name string
		o    outcome
		// shown is the binding's FullyApplied condition; nil for none.
		shown *metav1.Condition
		want  string // the reason of the event recorded; "" for none
	}{
		{name: "the condition tells of it", o: missing,
			shown: fullyApplied(rendering.ReasonDependencyNotFound, "dependencies not found: ConfigMap shop/missing")},
		{name: "the condition tells of it, and of clusters yet to apply", o: missing,
			shown: fullyApplied(rendering.ReasonDependencyNotFound, "dependencies not found: ConfigMap shop/missing; m1: not applied yet")},
		{name: "an invalid override policy the condition tells of", o: invalid,
			shown: fullyApplied(rendering.ReasonInvalidOverridePolicy, invalidMsg)},
		{name: "no condition yet", o: missing, want: rendering.ReasonDependencyNotFound},
		{name: "the condition tells of another dependency", o: missing,
			shown: fullyApplied(rendering.ReasonDependencyNotFound, "dependencies not found: ConfigMap shop/other"),
			want:  rendering.ReasonDependencyNotFound},
		{name: "the condition tells of part of it", o: outcome{missingDeps: []string{"ConfigMap shop/missing", "Secret shop/s"}},
			shown: fullyApplied(rendering.ReasonDependencyNotFound, "dependencies not found: ConfigMap shop/missing"),
			want:  rendering.ReasonDependencyNotFound},
		{name: "the same message under another reason", o: invalid,
			shown: fullyApplied(rendering.ReasonRenderFailed, invalidMsg), want: rendering.ReasonInvalidOverridePolicy},
		{name: "the condition says applied", o: missing,
			shown: &metav1.Condition{Type: workv1alpha1.ConditionFullyApplied, Status: metav1.ConditionTrue,
				Reason: rendering.ReasonFullyApplied, Message: "applied in 1 cluster(s)"},
			want: rendering.ReasonDependencyNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &workv1alpha1.ResourceBinding{
				ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-deployment", UID: "u1", Generation: 2},
				Spec:       workv1alpha1.ResourceBindingSpec{Clusters: []workv1alpha1.TargetCluster{{Name: "m1"}}},
			}
			if tc.shown != nil {
				b.Status.Conditions = []metav1.Condition{*tc.shown}
			}
			events := &fedtest.Events{}
			r := &Reconciler{Renderings: &rendering.Store{}, Recorder: events}
			r.handOver(b, tc.o)
			got := events.All()
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("events %q; want none", got)
			case tc.want != "" && (len(got) != 1 || events.Find(b.Name, tc.want, "") == ""):
				t.Errorf("events %q; want one %s", got, tc.want)
			}
		})
	}
}

func fullyApplied(reason, message string) *metav1.Condition {
	return &metav1.Condition{Type: workv1alpha1.ConditionFullyApplied, Status: metav1.ConditionFalse, Reason: reason,
		Message: message, ObservedGeneration: 2}
}
