package interpreter

import (
	"context"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

// Swappable is an Interpreter that answers with whichever T was Set last: a layer whose whole configuration (the
// users' customizations, the webhook registrations) is rebuilt and swapped in at once, so a refused configuration
// never replaces a good one halfway. Calls already running finish with the T they started with. It is safe for
// concurrent use.
type Swappable[T Interpreter] struct {
	current atomic.Pointer[T]
}

var _ Interpreter = &Swappable[Interpreter]{}

// NewSwappable is a Swappable answering with initial.
func NewSwappable[T Interpreter](initial T) *Swappable[T] {
	s := &Swappable[T]{}
	s.Set(initial)
	return s
}

// Set makes in the interpreter that answers from now on.
func (s *Swappable[T]) Set(in T) { s.current.Store(&in) }

// Current is the interpreter answering now.
func (s *Swappable[T]) Current() T { return *s.current.Load() }

// Handles asks the current interpreter.
func (s *Swappable[T]) Handles(gvk schema.GroupVersionKind, op Operation) bool {
	return s.Current().Handles(gvk, op)
}

// InterpretReplica asks the current interpreter.
func (s *Swappable[T]) InterpretReplica(ctx context.Context, obj *unstructured.Unstructured) (int32, *workv1alpha1.ReplicaRequirements, error) {
	return s.Current().InterpretReplica(ctx, obj)
}

// InterpretComponent asks the current interpreter.
func (s *Swappable[T]) InterpretComponent(ctx context.Context, obj *unstructured.Unstructured) ([]Component, error) {
	return s.Current().InterpretComponent(ctx, obj)
}

// ReviseReplica asks the current interpreter.
func (s *Swappable[T]) ReviseReplica(ctx context.Context, obj *unstructured.Unstructured, replicas int32) (*unstructured.Unstructured, error) {
	return s.Current().ReviseReplica(ctx, obj, replicas)
}

// Retain asks the current interpreter.
func (s *Swappable[T]) Retain(ctx context.Context, desired, observed *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return s.Current().Retain(ctx, desired, observed)
}

// AggregateStatus asks the current interpreter.
func (s *Swappable[T]) AggregateStatus(ctx context.Context, obj *unstructured.Unstructured, items []workv1alpha1.AggregatedStatusItem) (*unstructured.Unstructured, error) {
	return s.Current().AggregateStatus(ctx, obj, items)
}

// InterpretStatus asks the current interpreter.
func (s *Swappable[T]) InterpretStatus(ctx context.Context, obj *unstructured.Unstructured) (*runtime.RawExtension, error) {
	return s.Current().InterpretStatus(ctx, obj)
}

// InterpretHealth asks the current interpreter.
func (s *Swappable[T]) InterpretHealth(ctx context.Context, obj *unstructured.Unstructured) (bool, error) {
	return s.Current().InterpretHealth(ctx, obj)
}

// InterpretDependency asks the current interpreter.
func (s *Swappable[T]) InterpretDependency(ctx context.Context, obj *unstructured.Unstructured) ([]DependentObjectReference, error) {
	return s.Current().InterpretDependency(ctx, obj)
}
