package customization

import (
	"context"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/declarative"
)

// Layer is an interpreter.Interpreter that delegates to the current set of customizations, swapped in whole by
// Set. It starts empty, handling nothing, and is safe for concurrent use.
type Layer struct {
	current atomic.Pointer[declarative.Interpreter]
}

var _ interpreter.Interpreter = &Layer{}

// NewLayer is a layer with no customizations.
func NewLayer() *Layer {
	l := &Layer{}
	empty, err := declarative.New(nil)
	if err != nil {
		panic(err) // an empty set always compiles
	}
	l.current.Store(empty)
	return l
}

// Set makes in the set that answers from now on. Calls already running finish with the set they started with.
func (l *Layer) Set(in *declarative.Interpreter) { l.current.Store(in) }

func (l *Layer) get() *declarative.Interpreter { return l.current.Load() }

// Handles reports whether a current customization has a script for op of gvk.
func (l *Layer) Handles(gvk schema.GroupVersionKind, op interpreter.Operation) bool {
	return l.get().Handles(gvk, op)
}

// InterpretReplica runs the current GetReplicas script of obj's kind.
func (l *Layer) InterpretReplica(ctx context.Context, obj *unstructured.Unstructured) (int32, *workv1alpha1.ReplicaRequirements, error) {
	return l.get().InterpretReplica(ctx, obj)
}

// InterpretComponent runs the current GetComponents script of obj's kind.
func (l *Layer) InterpretComponent(ctx context.Context, obj *unstructured.Unstructured) ([]interpreter.Component, error) {
	return l.get().InterpretComponent(ctx, obj)
}

// ReviseReplica runs the current ReviseReplica script of obj's kind.
func (l *Layer) ReviseReplica(ctx context.Context, obj *unstructured.Unstructured, replicas int32) (*unstructured.Unstructured, error) {
	return l.get().ReviseReplica(ctx, obj, replicas)
}

// Retain runs the current Retain script of desired's kind.
func (l *Layer) Retain(ctx context.Context, desired, observed *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return l.get().Retain(ctx, desired, observed)
}

// AggregateStatus runs the current AggregateStatus script of obj's kind.
func (l *Layer) AggregateStatus(ctx context.Context, obj *unstructured.Unstructured, items []workv1alpha1.AggregatedStatusItem) (*unstructured.Unstructured, error) {
	return l.get().AggregateStatus(ctx, obj, items)
}

// InterpretStatus runs the current ReflectStatus script of obj's kind.
func (l *Layer) InterpretStatus(ctx context.Context, obj *unstructured.Unstructured) (*runtime.RawExtension, error) {
	return l.get().InterpretStatus(ctx, obj)
}

// InterpretHealth runs the current InterpretHealth script of obj's kind.
func (l *Layer) InterpretHealth(ctx context.Context, obj *unstructured.Unstructured) (bool, error) {
	return l.get().InterpretHealth(ctx, obj)
}

// InterpretDependency runs the current GetDependencies script of obj's kind.
func (l *Layer) InterpretDependency(ctx context.Context, obj *unstructured.Unstructured) ([]interpreter.DependentObjectReference, error) {
	return l.get().InterpretDependency(ctx, obj)
}
