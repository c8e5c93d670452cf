package acceptance

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Fields points at the fields of one object's status that a verdict sets.
type Fields[P Version[P]] struct {
	ObservedGeneration *int64
	ServedGeneration   *int64
	LastAccepted       *P
	Conditions         *[]metav1.Condition
}

// owned is the part of a status that the reconciler writes: what the verdict says, and the Accepted condition
// without its transition time (which says when, not what). Other conditions are left as they are.
type owned[P Version[P]] struct {
	ObservedGeneration int64
	ServedGeneration   int64
	LastAccepted       P
	Accepted           *metav1.Condition
}

// ownedOf is the owned part of the status f points into.
func ownedOf[P Version[P]](f Fields[P]) owned[P] {
	o := owned[P]{ObservedGeneration: *f.ObservedGeneration, ServedGeneration: *f.ServedGeneration, LastAccepted: *f.LastAccepted}
	if c := meta.FindStatusCondition(*f.Conditions, ConditionAccepted); c != nil {
		c := *c
		c.LastTransitionTime = metav1.Time{}
		o.Accepted = &c
	}
	return o
}

// sameServing tells whether a and b say the same of the object: of which generation, what serves, what is kept,
// and whether it is accepted. They may differ in words (the condition's reason and message).
func sameServing[P Version[P]](a, b owned[P]) bool {
	return a.ObservedGeneration == b.ObservedGeneration && a.ServedGeneration == b.ServedGeneration &&
		equality.Semantic.DeepEqual(a.LastAccepted, b.LastAccepted) &&
		a.Accepted != nil && b.Accepted != nil && a.Accepted.Status == b.Accepted.Status &&
		a.Accepted.ObservedGeneration == b.Accepted.ObservedGeneration
}

// stated is a shard's verdict on one object, as it last wrote it or found it written, and when.
type stated[P Version[P]] struct {
	verdict owned[P]
	at      time.Time
}

// restateAfter is how long a shard leaves a status that says something else than its verdict, unchanged since, before
// writing its verdict again.
const restateAfter = time.Minute

// statusAction is what a shard does about an object's status.
type statusAction int

const (
	// statusAgrees: the status says what the shard would (perhaps in other words); nothing to write.
	statusAgrees statusAction = iota
	// statusWrite: write the shard's verdict.
	statusWrite
	// statusWait: another writer says otherwise; decide again later.
	statusWait
)

// decideStatus is what a shard whose verdict is want does about cur, the status in the host. last is its verdict as
// it last stated it (wrote it or found it written), nil when it has not. It writes when its verdict changed since
// (a new version, another object's edit, its own start) and the status says something else; a status that says the
// same in other words is left alone. A status that says something else while the verdict did not change was written
// by another version of fedmesh (an upgrade) or by hand: the shard writes its verdict again only restateAfter after
// it last stated it, and waits for the rest until then. So a shard writes at most once per change of its verdict and
// once per restateAfter, whatever other writers do: two versions that disagree take turns once a minute, not as fast
// as the API server allows, and the status still comes right once only one version is left.
func decideStatus[P Version[P]](cur, want owned[P], last *stated[P], now time.Time) (statusAction, time.Duration) {
	switch {
	case equality.Semantic.DeepEqual(cur, want):
		return statusAgrees, 0
	case last == nil || !equality.Semantic.DeepEqual(last.verdict, want):
		return statusWrite, 0
	case sameServing(cur, want):
		return statusAgrees, 0
	case now.Sub(last.at) >= restateAfter:
		return statusWrite, 0
	default:
		return statusWait, restateAfter - now.Sub(last.at)
	}
}
