package verdicts

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

func TestStore(t *testing.T) {
	applied := metav1.Condition{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionTrue, Reason: "Applied", Message: "ok", ObservedGeneration: 2}
	failed := metav1.Condition{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionFalse, Reason: "ConflictAbort", Message: "exists", ObservedGeneration: 2}
	work := func(uid types.UID, conds ...metav1.Condition) *workv1alpha1.Work {
		w := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: uid, Generation: 2}}
		w.Status.Conditions = conds
		return w
	}
	withTime := applied
	withTime.LastTransitionTime = metav1.Now()
	older := failed
	older.ObservedGeneration = 1

	tests := []struct {
		name string
		// set are the verdicts recorded, in order, each on the Work as it was then (written, the Work's status).
		set     []metav1.Condition
		written []metav1.Condition
		// read is the Work Applied is asked about.
		read     *workv1alpha1.Work
		want     *metav1.Condition
		notified int
	}{
		{name: "nothing recorded: the Work's own condition", read: work("u1", withTime), want: &withTime},
		{name: "nothing at all", read: work("u1"), want: nil},
		{name: "a verdict awaits its write", set: []metav1.Condition{applied}, read: work("u1"), want: &applied, notified: 1},
		{name: "a verdict the Work already shows is not recorded", set: []metav1.Condition{applied}, written: []metav1.Condition{withTime},
			read: work("u1", withTime), want: &withTime, notified: 0},
		{name: "the later verdict wins", set: []metav1.Condition{applied, failed}, read: work("u1"), want: &failed, notified: 2},
		{name: "the same verdict twice tells once", set: []metav1.Condition{applied, applied}, read: work("u1"), want: &applied, notified: 1},
		{name: "a verdict the Work came to show is forgotten", set: []metav1.Condition{applied}, read: work("u1", withTime), want: &withTime, notified: 1},
		{name: "a verdict older than the Work shows does not count", set: []metav1.Condition{older}, read: work("u1", withTime), want: &withTime, notified: 1},
		{name: "a namesake's verdict does not count", set: []metav1.Condition{failed}, read: work("u2", withTime), want: &withTime, notified: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := Store{Type: workv1alpha1.WorkApplied}
			notified := 0
			s.Subscribe(func(key types.NamespacedName) {
				if key != (types.NamespacedName{Namespace: "shop", Name: "web"}) {
					t.Errorf("told of %v", key)
				}
				notified++
			})
			for _, c := range tc.set {
				w := work("u1", tc.written...)
				s.Set(w, w.Status.Conditions, c)
			}
			got := s.Current(tc.read, tc.read.Status.Conditions)
			switch {
			case (got == nil) != (tc.want == nil):
				t.Fatalf("Current = %+v, want %+v", got, tc.want)
			case got != nil && (!Same(*got, *tc.want) || !got.LastTransitionTime.Equal(&tc.want.LastTransitionTime)):
				t.Errorf("Current = %+v, want %+v", *got, *tc.want)
			}
			if notified != tc.notified {
				t.Errorf("notified %d times, want %d", notified, tc.notified)
			}
		})
	}
}

func TestForgottenVerdictsAreGone(t *testing.T) {
	s := Store{Type: workv1alpha1.WorkApplied}
	w := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "u1"}}
	s.Set(w, nil, metav1.Condition{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionTrue, Reason: "Applied"})
	s.Forget(types.NamespacedName{Namespace: "shop", Name: "web"})
	if got := s.Current(w, nil); got != nil {
		t.Errorf("Current after Forget = %+v", got)
	}
	// A verdict written (shown by the Work) leaves the store.
	c := metav1.Condition{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionTrue, Reason: "Applied"}
	s.Set(w, nil, c)
	s.Current(w, []metav1.Condition{c})
	if got := s.Current(w, nil); got != nil {
		t.Errorf("verdict %+v held after the Work showed it", got)
	}
}
