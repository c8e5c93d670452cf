package rendering

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Store holds the last outcome of rendering each binding, from the binding stage for the binding-status stage.
type Store struct {
	mu       sync.Mutex
	outcomes map[types.NamespacedName]held
	notify   func(types.NamespacedName)
}

type held struct {
	uid     types.UID
	outcome Outcome
}

// Subscribe makes notify the function told of each binding with a new outcome: the stage that judges it.
func (s *Store) Subscribe(notify func(types.NamespacedName)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notify = notify
}

// Set records o as the outcome of rendering the binding obj. It reports whether o differs from the outcome held,
// and then tells the subscriber.
func (s *Store) Set(obj metav1.Object, o Outcome) bool {
	key := keyOf(obj)
	s.mu.Lock()
	if cur, ok := s.outcomes[key]; ok && cur.uid == obj.GetUID() && cur.outcome.equal(o) {
		s.mu.Unlock()
		return false
	}
	if s.outcomes == nil {
		s.outcomes = map[types.NamespacedName]held{}
	}
	s.outcomes[key] = held{uid: obj.GetUID(), outcome: o}
	notify := s.notify
	s.mu.Unlock()
	if notify != nil {
		notify(key)
	}
	return true
}

// Get is the last outcome of rendering the binding obj at its generation; nil when there is none yet (none
// recorded, one of an earlier generation, or of another binding of the same name, deleted and made again).
func (s *Store) Get(obj metav1.Object) *Outcome {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.outcomes[keyOf(obj)]
	if !ok || cur.uid != obj.GetUID() || cur.outcome.Generation != obj.GetGeneration() {
		return nil
	}
	o := cur.outcome
	return &o
}

// Forget drops the outcome of the binding key, which is gone (or no longer this process's to judge).
func (s *Store) Forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.outcomes, key)
}

func keyOf(obj metav1.Object) types.NamespacedName {
	return types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
}
