package binding

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

func TestSpecOrCondition(t *testing.T) {
	applied := metav1.Condition{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionTrue, Reason: "Applied", ObservedGeneration: 1}
	scheduled := metav1.Condition{Type: workv1alpha1.ConditionScheduled, Status: metav1.ConditionTrue, Reason: "Scheduled"}
	work := func(gen int64, manifests int, conds ...metav1.Condition) client.Object {
		w := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Name: "w", Generation: gen}}
		w.Status.Conditions = conds
		for range manifests {
			w.Status.ManifestStatuses = append(w.Status.ManifestStatuses, workv1alpha1.ManifestStatus{Status: &runtime.RawExtension{Raw: []byte(`{"replicas":1}`)}})
		}
		return w
	}
	binding := func(gen int64, aggregated int, conds ...metav1.Condition) client.Object {
		b := &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Name: "b", Generation: gen}}
		b.Status.Conditions = conds
		for range aggregated {
			b.Status.AggregatedStatus = append(b.Status.AggregatedStatus, workv1alpha1.AggregatedStatusItem{ClusterName: "m", Applied: true})
		}
		return b
	}
	for _, tc := range []struct {
		name     string
		condType string
		old, cur client.Object
		want     bool
	}{
		{"Work applied", workv1alpha1.WorkApplied, work(1, 0), work(1, 0, applied), true},
		{"Work's manifest statuses only", workv1alpha1.WorkApplied, work(1, 0, applied), work(1, 1, applied), false},
		{"Work's spec", workv1alpha1.WorkApplied, work(1, 1, applied), work(2, 1, applied), true},
		{"binding scheduled", workv1alpha1.ConditionScheduled, binding(1, 0), binding(1, 0, scheduled), true},
		{"binding's aggregated status only", workv1alpha1.ConditionScheduled, binding(1, 0, scheduled), binding(1, 2, scheduled), false},
		{"binding's FullyApplied (this stage's own) only", workv1alpha1.ConditionScheduled, binding(1, 0, scheduled),
			binding(1, 0, scheduled, metav1.Condition{Type: workv1alpha1.ConditionFullyApplied, Status: metav1.ConditionTrue}), false},
		{"binding's spec", workv1alpha1.ConditionScheduled, binding(1, 0, scheduled), binding(2, 0, scheduled), true},
	} {
		if got := specOrCondition(tc.condType).Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.cur}); got != tc.want {
			t.Errorf("%s: passed = %v, want %v", tc.name, got, tc.want)
		}
	}
}
