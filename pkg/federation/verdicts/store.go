package verdicts

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fedmesh/fedmesh/pkg/federation/handoff"
)

// Store holds, for each object, the condition of Type its deciding stage last gave it that its status does not
// show yet.
type Store struct {
	// Type is the condition type held.
	Type string

	board handoff.Board[metav1.Condition]
}

// Subscribe makes notify the function told of each object with a new verdict: the stage that writes it.
func (s *Store) Subscribe(notify func(types.NamespacedName)) { s.board.Subscribe(notify) }

// Set records cond as obj's verdict, unless it is the condition obj already has or awaits, and tells the
// subscriber when it is new. written are obj's status conditions.
func (s *Store) Set(obj metav1.Object, written []metav1.Condition, cond metav1.Condition) {
	w := meta.FindStatusCondition(written, s.Type)
	s.board.Put(obj, cond, func(held *metav1.Condition) bool {
		cur := w
		if held != nil && !shown(*held, w) {
			cur = held
		}
		return cur != nil && Same(*cur, cond)
	})
}

// Current is obj's condition as its deciding stage last judged it: the verdict awaiting its write, or else the
// condition obj's status holds (written); nil when there is neither. A verdict the status already shows is
// forgotten: it has been written.
func (s *Store) Current(obj metav1.Object, written []metav1.Condition) *metav1.Condition {
	w := meta.FindStatusCondition(written, s.Type)
	v, ok := s.board.Take(obj, func(v metav1.Condition) bool { return !shown(v, w) })
	if !ok {
		return w
	}
	return &v
}

// Forget drops the verdict of the object key, which is gone.
func (s *Store) Forget(key types.NamespacedName) { s.board.Forget(key) }

// shown reports whether the written condition w makes the verdict v moot: it shows v, or is of a newer generation
// (another process wrote a newer one, as when a namespace moved between shards while v waited, and came back).
func shown(v metav1.Condition, w *metav1.Condition) bool {
	return w != nil && (Same(*w, v) || v.ObservedGeneration < w.ObservedGeneration)
}

// Same reports whether a and b say the same: type, status, reason, message and generation; the transition time
// is the writer's.
func Same(a, b metav1.Condition) bool {
	return a.Type == b.Type && a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message &&
		a.ObservedGeneration == b.ObservedGeneration
}
