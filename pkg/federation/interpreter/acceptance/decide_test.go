package acceptance

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// version stands for the version a status keeps.
type version struct {
	Generation int64
	Script     string
}

func (v *version) DeepCopy() *version {
	if v == nil {
		return nil
	}
	c := *v
	return &c
}

// status stands for an object's status.
type status struct {
	ObservedGeneration int64
	ServedGeneration   int64
	LastAccepted       *version
	Conditions         []metav1.Condition
}

func fieldsOf(s *status) Fields[*version] {
	return Fields[*version]{ObservedGeneration: &s.ObservedGeneration, ServedGeneration: &s.ServedGeneration,
		LastAccepted: &s.LastAccepted, Conditions: &s.Conditions}
}

// TestDecideStatus: a shard writes its verdict when it changed, not when the status says the same (in other words
// too), and no sooner than restateAfter over a status that says otherwise while its verdict stayed.
func TestDecideStatus(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	st := func(gen, served int64, accepted metav1.ConditionStatus, reason, msg string, extra ...metav1.Condition) status {
		return status{ObservedGeneration: gen, ServedGeneration: served,
			LastAccepted: &version{Generation: 2, Script: "good"},
			Conditions: append([]metav1.Condition{{Type: ConditionAccepted, Status: accepted,
				ObservedGeneration: gen, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}},
				extra...)}
	}
	const accept, invalid = "Accepted", "Invalid"
	mine := st(2, 2, metav1.ConditionTrue, accept, "serving 1 scripts")
	later := mine
	later.Conditions = []metav1.Condition{mine.Conditions[0]}
	later.Conditions[0].LastTransitionTime = metav1.NewTime(now)
	reworded := st(2, 2, metav1.ConditionTrue, "Loaded", "accepted by fedmesh 0.9")
	refused := st(2, 0, metav1.ConditionFalse, invalid, "fedmesh 0.9 cannot load it")
	stale := st(1, 1, metav1.ConditionTrue, accept, "serving 1 scripts")
	stale.LastAccepted = &version{Generation: 1, Script: "good too"}
	ownedBy := func(s status) owned[*version] { return ownedOf(fieldsOf(&s)) }
	statedAgo := func(s status, ago time.Duration) *stated[*version] {
		return &stated[*version]{verdict: ownedBy(s), at: now.Add(-ago)}
	}

	for _, tc := range []struct {
		name  string
		cur   status
		last  *stated[*version]
		want  statusAction
		after time.Duration
	}{
		{"the same", mine, statedAgo(mine, time.Second), statusAgrees, 0},
		{"the same, seen first", mine, nil, statusAgrees, 0},
		{"the same since another time", later, nil, statusAgrees, 0},
		{"the same beside another condition", st(2, 2, metav1.ConditionTrue, accept, "serving 1 scripts",
			metav1.Condition{Type: "Reviewed", Status: metav1.ConditionTrue}), statedAgo(mine, time.Second), statusAgrees, 0},
		{"never written", status{}, nil, statusWrite, 0},
		{"of the generation before", stale, statedAgo(stale, time.Second), statusWrite, 0},
		{"the verdict changed", refused, statedAgo(refused, time.Second), statusWrite, 0},
		{"in other words, seen first", reworded, nil, statusWrite, 0},
		{"in other words, stated before", reworded, statedAgo(mine, time.Second), statusAgrees, 0},
		{"otherwise, stated just now", refused, statedAgo(mine, 10*time.Second), statusWait, restateAfter - 10*time.Second},
		{"otherwise, stated long ago", refused, statedAgo(mine, restateAfter), statusWrite, 0},
		{"cleared, stated just now", status{}, statedAgo(mine, time.Second), statusWait, restateAfter - time.Second},
	} {
		got, after := decideStatus(ownedBy(tc.cur), ownedBy(mine), tc.last, now)
		if got != tc.want || after != tc.after {
			t.Errorf("%s: %d after %s, want %d after %s", tc.name, got, after, tc.want, tc.after)
		}
	}
}
