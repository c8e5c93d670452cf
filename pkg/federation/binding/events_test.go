package binding

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
)

// inTurn marks w as its cluster's turn in a paced rollout.
func inTurn(w *workv1alpha1.Work) *workv1alpha1.Work {
	w.Annotations = map[string]string{names.RolloutPhaseAnnotation: "Rolling"}
	return w
}

// TestEditedOrDeleted: of a Work, this stage looks again at what it must undo, not at it being applied, unless
// what is reported may end a cluster's turn in a paced rollout.
func TestEditedOrDeleted(t *testing.T) {
	applied := metav1.Condition{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionTrue, Reason: "Applied", ObservedGeneration: 1}
	work := func(gen int64, manifests int, conds ...metav1.Condition) *workv1alpha1.Work {
		w := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Name: "w", Generation: gen, ResourceVersion: fmt.Sprint(10*gen + int64(manifests) + int64(len(conds)))}}
		w.Status.Conditions = conds
		for range manifests {
			w.Status.ManifestStatuses = append(w.Status.ManifestStatuses, workv1alpha1.ManifestStatus{Status: &runtime.RawExtension{Raw: []byte(`{"replicas":1}`)}})
		}
		return w
	}
	for _, tc := range []struct {
		name     string
		old, cur *workv1alpha1.Work
		want     bool
	}{
		{"applied", work(1, 0), work(1, 0, applied), false},
		{"manifest statuses", work(1, 0, applied), work(1, 1, applied), false},
		{"spec edited (or deletion begun)", work(1, 1, applied), work(2, 1, applied), true},
		{"a member's report during its turn in a paced rollout", inTurn(work(1, 0, applied)), inTurn(work(1, 1, applied)), true},
		{"the same Work unchanged during its turn (a resync)", inTurn(work(1, 1, applied)), inTurn(work(1, 1, applied)), false},
	} {
		if got := editedOrDeleted.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.cur}); got != tc.want {
			t.Errorf("%s: passed = %v, want %v", tc.name, got, tc.want)
		}
	}
	if editedOrDeleted.Create(event.CreateEvent{Object: work(1, 0)}) {
		t.Error("a Work's creation (this stage's own) passed")
	}
	if !editedOrDeleted.Delete(event.DeleteEvent{Object: work(1, 0)}) {
		t.Error("a Work's deletion did not pass")
	}
}
