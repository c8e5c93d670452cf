package interpreter

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

// ErrUnsupported matches the error of an operation that no interpreter handles for a kind.
var ErrUnsupported = errors.New("operation not supported for kind")

// UnsupportedError is the error of an operation that no interpreter handles for a kind.
type UnsupportedError struct {
	GVK       schema.GroupVersionKind
	Operation Operation
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("no interpreter handles %s for %s", e.Operation, e.GVK)
}

// Is makes errors.Is(err, ErrUnsupported) true.
func (e *UnsupportedError) Is(target error) bool { return target == ErrUnsupported }

// Unsupported is the error an interpreter returns when asked op for obj's kind although it does not handle it.
func Unsupported(obj *unstructured.Unstructured, op Operation) error {
	return &UnsupportedError{GVK: obj.GroupVersionKind(), Operation: op}
}

// Layers are the interpreters of the chain, by kind of source; nil layers are skipped.
type Layers struct {
	// Customization runs the declarative Lua of ResourceInterpreterCustomizations.
	Customization Interpreter
	// Webhook calls the ResourceInterpreterWebhookConfigurations.
	Webhook Interpreter
	// Bundled runs the Lua customizations shipped with fedmesh for well-known CRDs.
	Bundled Interpreter
	// Native is the Go interpreter of built-in Kubernetes kinds.
	Native Interpreter
}

// Chain builds the chain in the order of DESIGN.md: customization, webhook, bundled, native.
func (l Layers) Chain() *Chain {
	var links []Interpreter
	for _, i := range []Interpreter{l.Customization, l.Webhook, l.Bundled, l.Native} {
		if i != nil {
			links = append(links, i)
		}
	}
	return NewChain(links...)
}

// Chain asks its interpreters in order; the first that handles an object's kind and the operation answers, and
// the rest are not asked (unless it answers ErrUnsupported after all: see ask). A Chain is itself an Interpreter,
// so chains nest.
type Chain struct {
	links []Interpreter
}

var _ Interpreter = &Chain{}

// NewChain is a chain asking links in the given order.
func NewChain(links ...Interpreter) *Chain {
	return &Chain{links: append([]Interpreter(nil), links...)}
}

// Handles reports whether some interpreter of the chain handles op for gvk.
func (c *Chain) Handles(gvk schema.GroupVersionKind, op Operation) bool {
	return c.find(gvk, op) != nil
}

func (c *Chain) find(gvk schema.GroupVersionKind, op Operation) Interpreter {
	for _, i := range c.links {
		if i.Handles(gvk, op) {
			return i
		}
	}
	return nil
}

// ask calls op on obj through call, with the first link that handles op for obj's kind. A link that answers
// ErrUnsupported all the same (a live layer whose set was swapped between its Handles and the call) hands the call
// on to the next link that handles it: the answer is then the one it would have given had the swap come first,
// never ErrUnsupported while a later link handles the kind.
func ask[T any](c *Chain, obj *unstructured.Unstructured, op Operation, call func(Interpreter) (T, error)) (T, error) {
	var zero T
	if obj == nil {
		return zero, fmt.Errorf("%s: no object", op)
	}
	gvk := obj.GroupVersionKind()
	for _, i := range c.links {
		if !i.Handles(gvk, op) {
			continue
		}
		out, err := call(i)
		if errors.Is(err, ErrUnsupported) {
			continue
		}
		return out, err
	}
	return zero, Unsupported(obj, op)
}

// replicas is what InterpretReplica answers, as one value for ask.
type replicas struct {
	n        int32
	requires *workv1alpha1.ReplicaRequirements
}

// InterpretReplica asks the first interpreter that handles InterpretReplica for obj's kind.
func (c *Chain) InterpretReplica(ctx context.Context, obj *unstructured.Unstructured) (int32, *workv1alpha1.ReplicaRequirements, error) {
	r, err := ask(c, obj, InterpretReplica, func(i Interpreter) (replicas, error) {
		n, requires, err := i.InterpretReplica(ctx, obj)
		return replicas{n, requires}, err
	})
	return r.n, r.requires, err
}

// InterpretComponent asks the first interpreter that handles InterpretComponent for obj's kind.
func (c *Chain) InterpretComponent(ctx context.Context, obj *unstructured.Unstructured) ([]Component, error) {
	return ask(c, obj, InterpretComponent, func(i Interpreter) ([]Component, error) { return i.InterpretComponent(ctx, obj) })
}

// ReviseReplica asks the first interpreter that handles ReviseReplica for obj's kind.
func (c *Chain) ReviseReplica(ctx context.Context, obj *unstructured.Unstructured, replicas int32) (*unstructured.Unstructured, error) {
	return ask(c, obj, ReviseReplica, func(i Interpreter) (*unstructured.Unstructured, error) {
		return i.ReviseReplica(ctx, obj, replicas)
	})
}

// Retain asks the first interpreter that handles Retain for desired's kind.
func (c *Chain) Retain(ctx context.Context, desired, observed *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return ask(c, desired, Retain, func(i Interpreter) (*unstructured.Unstructured, error) {
		return i.Retain(ctx, desired, observed)
	})
}

// AggregateStatus asks the first interpreter that handles AggregateStatus for obj's kind.
func (c *Chain) AggregateStatus(ctx context.Context, obj *unstructured.Unstructured, items []workv1alpha1.AggregatedStatusItem) (*unstructured.Unstructured, error) {
	return ask(c, obj, AggregateStatus, func(i Interpreter) (*unstructured.Unstructured, error) {
		return i.AggregateStatus(ctx, obj, items)
	})
}

// InterpretStatus asks the first interpreter that handles InterpretStatus for obj's kind.
func (c *Chain) InterpretStatus(ctx context.Context, obj *unstructured.Unstructured) (*runtime.RawExtension, error) {
	return ask(c, obj, InterpretStatus, func(i Interpreter) (*runtime.RawExtension, error) { return i.InterpretStatus(ctx, obj) })
}

// InterpretHealth asks the first interpreter that handles InterpretHealth for obj's kind.
func (c *Chain) InterpretHealth(ctx context.Context, obj *unstructured.Unstructured) (bool, error) {
	return ask(c, obj, InterpretHealth, func(i Interpreter) (bool, error) { return i.InterpretHealth(ctx, obj) })
}

// InterpretDependency asks the first interpreter that handles InterpretDependency for obj's kind.
func (c *Chain) InterpretDependency(ctx context.Context, obj *unstructured.Unstructured) ([]DependentObjectReference, error) {
	return ask(c, obj, InterpretDependency, func(i Interpreter) ([]DependentObjectReference, error) {
		return i.InterpretDependency(ctx, obj)
	})
}

// Health is obj's health as an AggregatedStatusItem records it: Healthy when no interpreter judges the kind's
// health (a ConfigMap or a ClusterRole is there or not), as Karmada has it, so that what waits for health (a
// graceful eviction) does not wait for such kinds; Unknown when the interpreter fails (the error is returned
// too); otherwise Healthy or Unhealthy.
func Health(ctx context.Context, i Interpreter, obj *unstructured.Unstructured) (workv1alpha1.ResourceHealth, error) {
	if !i.Handles(obj.GroupVersionKind(), InterpretHealth) {
		return workv1alpha1.ResourceHealthy, nil
	}
	healthy, err := i.InterpretHealth(ctx, obj)
	switch {
	case err != nil:
		return workv1alpha1.ResourceUnknown, err
	case healthy:
		return workv1alpha1.ResourceHealthy, nil
	default:
		return workv1alpha1.ResourceUnhealthy, nil
	}
}
