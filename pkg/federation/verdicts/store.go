package verdicts

import (
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Store holds, for each object, the condition of Type its deciding stage last gave it that its status does not
// show yet.
type Store struct {
	// Type is the condition type held.
	Type string

	mu      sync.Mutex
	pending map[types.NamespacedName]verdict
	notify  func(types.NamespacedName)
}

type verdict struct {
	uid  types.UID
	cond metav1.Condition
}

// Subscribe makes notify the function told of each object with a new verdict: the stage that writes it.
func (s *Store) Subscribe(notify func(types.NamespacedName)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notify = notify
}

// Set records cond as obj's verdict, unless it is the condition obj already has or awaits, and tells the
// subscriber when it is new. written are obj's status conditions.
func (s *Store) Set(obj metav1.Object, written []metav1.Condition, cond metav1.Condition) {
	key := keyOf(obj)
	s.mu.Lock()
	cur := s.current(key, obj.GetUID(), written)
	if cur != nil && Same(*cur, cond) {
		s.mu.Unlock()
		return
	}
	if s.pending == nil {
		s.pending = map[types.NamespacedName]verdict{}
	}
	s.pending[key] = verdict{uid: obj.GetUID(), cond: cond}
	notify := s.notify
	s.mu.Unlock()
	if notify != nil {
		notify(key)
	}
}

// Current is obj's condition as its deciding stage last judged it: the verdict awaiting its write, or else the
// condition obj's status holds (written); nil when there is neither. A verdict the status already shows is
// forgotten: it has been written.
func (s *Store) Current(obj metav1.Object, written []metav1.Condition) *metav1.Condition {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current(keyOf(obj), obj.GetUID(), written)
}

// Forget drops the verdict of the object key, which is gone.
func (s *Store) Forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pending, key)
}

// current is the verdict of key awaiting its write, or the written condition. Dropped on the way: a verdict of
// another object of the same name (deleted and made again), one the written conditions show, and one of an older
// generation than they show (another process wrote a newer one, as when a namespace moved between shards while
// this verdict waited, and came back). s.mu is held.
func (s *Store) current(key types.NamespacedName, uid types.UID, written []metav1.Condition) *metav1.Condition {
	w := meta.FindStatusCondition(written, s.Type)
	v, ok := s.pending[key]
	switch {
	case !ok:
		return w
	case v.uid != uid || w != nil && (Same(*w, v.cond) || v.cond.ObservedGeneration < w.ObservedGeneration):
		delete(s.pending, key)
		return w
	}
	return &v.cond
}

func keyOf(obj metav1.Object) types.NamespacedName {
	return types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// Same reports whether a and b say the same: type, status, reason, message and generation; the transition time
// is the writer's.
func Same(a, b metav1.Condition) bool {
	return a.Type == b.Type && a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message &&
		a.ObservedGeneration == b.ObservedGeneration
}
