package rendering

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fedmesh/fedmesh/pkg/federation/handoff"
)

// Store holds the last outcome of rendering each binding, from the binding stage for the binding-status stage.
type Store struct {
	board handoff.Board[Outcome]
}

// Subscribe makes notify the function told of each binding with a new outcome: the stage that judges it.
func (s *Store) Subscribe(notify func(types.NamespacedName)) { s.board.Subscribe(notify) }

// Set records o as the outcome of rendering the binding obj. It reports whether o differs from the outcome held,
// and then tells the subscriber.
func (s *Store) Set(obj metav1.Object, o Outcome) bool {
	return s.board.Put(obj, o, func(held *Outcome) bool { return held != nil && held.equal(o) })
}

// Get is the last outcome of rendering the binding obj at its generation; nil when there is none yet (none
// recorded, one of an earlier generation, or of another binding of the same name, deleted and made again).
func (s *Store) Get(obj metav1.Object) *Outcome {
	o, ok := s.board.Take(obj, func(Outcome) bool { return true })
	if !ok || o.Generation != obj.GetGeneration() {
		return nil
	}
	return &o
}

// Forget drops the outcome of the binding key, which is gone (or no longer this process's to judge).
func (s *Store) Forget(key types.NamespacedName) { s.board.Forget(key) }
