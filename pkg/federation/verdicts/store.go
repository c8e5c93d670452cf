package verdicts

import (
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

// Store holds, for each Work, the Applied condition its last apply earned that its status does not show yet.
type Store struct {
	mu      sync.Mutex
	pending map[types.NamespacedName]verdict
	notify  func(types.NamespacedName)
}

type verdict struct {
	uid  types.UID
	cond metav1.Condition
}

// Subscribe makes notify the function told of each Work with a new verdict: the work-status stage, to write it.
func (s *Store) Subscribe(notify func(types.NamespacedName)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notify = notify
}

// Set records cond as work's verdict, unless it is the Applied condition work already has or awaits, and tells
// the subscriber when it is new.
func (s *Store) Set(work *workv1alpha1.Work, cond metav1.Condition) {
	key := types.NamespacedName{Namespace: work.Namespace, Name: work.Name}
	s.mu.Lock()
	cur := s.current(key, work)
	if cur != nil && Same(*cur, cond) {
		s.mu.Unlock()
		return
	}
	if s.pending == nil {
		s.pending = map[types.NamespacedName]verdict{}
	}
	s.pending[key] = verdict{uid: work.UID, cond: cond}
	notify := s.notify
	s.mu.Unlock()
	if notify != nil {
		notify(key)
	}
}

// Applied is work's Applied condition as its last apply judged it: the verdict awaiting its write, or else the
// condition work's status holds; nil when there is neither. A verdict that work's status already shows is
// forgotten: it has been written.
func (s *Store) Applied(work *workv1alpha1.Work) *metav1.Condition {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current(types.NamespacedName{Namespace: work.Namespace, Name: work.Name}, work)
}

// Forget drops the verdict of the Work key, which is gone.
func (s *Store) Forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pending, key)
}

// current is the verdict of key awaiting its write, or work's own condition; a verdict of another Work of the
// same name (deleted and made again) or one work's status shows is dropped on the way. s.mu is held.
func (s *Store) current(key types.NamespacedName, work *workv1alpha1.Work) *metav1.Condition {
	written := meta.FindStatusCondition(work.Status.Conditions, workv1alpha1.WorkApplied)
	v, ok := s.pending[key]
	switch {
	case !ok:
		return written
	case v.uid != work.UID || written != nil && Same(*written, v.cond):
		delete(s.pending, key)
		return written
	}
	return &v.cond
}

// Same reports whether a and b say the same: type, status, reason, message and generation; the transition time
// is the writer's.
func Same(a, b metav1.Condition) bool {
	return a.Type == b.Type && a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message &&
		a.ObservedGeneration == b.ObservedGeneration
}
