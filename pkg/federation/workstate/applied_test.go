package workstate

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

func TestApplied(t *testing.T) {
	work := func(conds ...metav1.Condition) *workv1alpha1.Work {
		return &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Status: workv1alpha1.WorkStatus{Conditions: conds}}
	}
	cond := func(status metav1.ConditionStatus, gen int64, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: workv1alpha1.WorkApplied, Status: status, ObservedGeneration: gen, Reason: reason, Message: msg}
	}
	for _, tc := range []struct {
		name        string
		work        *workv1alpha1.Work
		why         string
		ok, pending bool
	}{
		{"no Work", nil, "no Work yet", false, true},
		{"no condition", work(), "not applied yet", false, true},
		{"applied at its generation", work(cond(metav1.ConditionTrue, 2, "Applied", "")), "", true, false},
		{"applied, generation not said", work(cond(metav1.ConditionTrue, 0, "Applied", "")), "", true, false},
		{"applied at an older generation", work(cond(metav1.ConditionTrue, 1, "Applied", "")), "the latest manifests are not applied yet", false, true},
		{"failed, with a message", work(cond(metav1.ConditionFalse, 2, "ConflictAbort", "exists")), "not applied: exists", false, false},
		{"failed, reason only", work(cond(metav1.ConditionFalse, 2, "ApplyFailed", "")), "not applied: ApplyFailed", false, false},
	} {
		why, ok, pending := Applied(tc.work)
		if why != tc.why || ok != tc.ok || pending != tc.pending {
			t.Errorf("%s: Applied = %q %v %v, want %q %v %v", tc.name, why, ok, pending, tc.why, tc.ok, tc.pending)
		}
	}
}
