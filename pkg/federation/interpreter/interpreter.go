package interpreter

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

// Operation is a question the federation asks about an object; the values are those of the webhook API.
type Operation = configv1alpha1.InterpreterOperation

// The operations an Interpreter answers.
const (
	InterpretReplica    = configv1alpha1.InterpreterOperationInterpretReplica
	InterpretComponent  = configv1alpha1.InterpreterOperationInterpretComponent
	ReviseReplica       = configv1alpha1.InterpreterOperationReviseReplica
	Retain              = configv1alpha1.InterpreterOperationRetain
	AggregateStatus     = configv1alpha1.InterpreterOperationAggregateStatus
	InterpretStatus     = configv1alpha1.InterpreterOperationInterpretStatus
	InterpretHealth     = configv1alpha1.InterpreterOperationInterpretHealth
	InterpretDependency = configv1alpha1.InterpreterOperationInterpretDependency
)

// Operations lists every operation of the contract, in a stable order.
var Operations = []Operation{
	InterpretReplica, InterpretComponent, ReviseReplica, Retain,
	AggregateStatus, InterpretStatus, InterpretHealth, InterpretDependency,
}

// Conventions on objects that the interpreters read.
const (
	// RetainReplicasLabel on a template, with the value "true", keeps each member's own replica count (e.g. set by
	// the member's HPA) instead of the scheduler's share.
	RetainReplicasLabel = "work.fedmesh.io/retain-replicas"

	// TemplateGenerationAnnotation on the workload of a Work, and so on the member's object, is the generation of
	// the template it was rendered from: status aggregation reports the template's generation as observed only once
	// every member has caught up with it. Karmada's key, which Karmada's status scripts read.
	TemplateGenerationAnnotation = "resourcetemplate.karmada.io/generation"
)

// ReplicaInterpreter finds the replica count of a template and what each replica needs.
type ReplicaInterpreter interface {
	// InterpretReplica returns obj's replicas and per-replica requirements; requirements are nil for kinds
	// without a pod template.
	InterpretReplica(ctx context.Context, obj *unstructured.Unstructured) (int32, *workv1alpha1.ReplicaRequirements, error)
}

// ComponentInterpreter splits a workload made of several pod sets into its components.
type ComponentInterpreter interface {
	// InterpretComponent returns obj's components, each with its replicas and requirements.
	InterpretComponent(ctx context.Context, obj *unstructured.Unstructured) ([]Component, error)
}

// ReplicaReviser gives one cluster its share of a template's replicas.
type ReplicaReviser interface {
	// ReviseReplica returns a copy of obj with its replica count set to replicas; obj is not changed.
	ReviseReplica(ctx context.Context, obj *unstructured.Unstructured, replicas int32) (*unstructured.Unstructured, error)
}

// Retainer keeps the fields a member cluster owns when the federation updates the member's object.
type Retainer interface {
	// Retain returns a copy of desired, the object about to be applied, with the member-owned fields of observed,
	// the object as it is in the member, copied in. Neither argument is changed.
	Retain(ctx context.Context, desired, observed *unstructured.Unstructured) (*unstructured.Unstructured, error)
}

// StatusAggregator folds the members' statuses into the template's.
type StatusAggregator interface {
	// AggregateStatus returns a copy of obj, the template, with its status built from items, the per-cluster
	// statuses InterpretStatus reflected. obj is not changed.
	AggregateStatus(ctx context.Context, obj *unstructured.Unstructured, items []workv1alpha1.AggregatedStatusItem) (*unstructured.Unstructured, error)
}

// StatusInterpreter picks what of a member's object is recorded as its status (Karmada's ReflectStatus).
type StatusInterpreter interface {
	// InterpretStatus returns the status to record for obj, the member's object; nil when it has none yet.
	InterpretStatus(ctx context.Context, obj *unstructured.Unstructured) (*runtime.RawExtension, error)
}

// HealthInterpreter judges a member's object.
type HealthInterpreter interface {
	// InterpretHealth reports whether obj, the member's object, is healthy.
	InterpretHealth(ctx context.Context, obj *unstructured.Unstructured) (bool, error)
}

// DependencyInterpreter finds the objects a template needs propagated with it.
type DependencyInterpreter interface {
	// InterpretDependency returns the objects obj refers to, without duplicates.
	InterpretDependency(ctx context.Context, obj *unstructured.Unstructured) ([]DependentObjectReference, error)
}

// Interpreter answers every operation for the kinds and operations it handles. Calling an operation it does not
// handle returns an error that matches ErrUnsupported.
type Interpreter interface {
	// Handles reports whether the interpreter answers op for objects of kind gvk.
	Handles(gvk schema.GroupVersionKind, op Operation) bool

	ReplicaInterpreter
	ComponentInterpreter
	ReplicaReviser
	Retainer
	StatusAggregator
	StatusInterpreter
	HealthInterpreter
	DependencyInterpreter
}

// Component is one pod set of a multi-template workload (e.g. the leader and the workers of a job).
type Component struct {
	// Name identifies the component within the workload.
	Name string `json:"name"`

	// Replicas is the component's replicas in one whole workload.
	Replicas int32 `json:"replicas"`

	// ReplicaRequirements is what one replica of the component needs.
	ReplicaRequirements *workv1alpha1.ReplicaRequirements `json:"replicaRequirements,omitempty"`
}

// DependentObjectReference is an object a template depends on: one by name, or all matching LabelSelector.
type DependentObjectReference struct {
	// APIVersion of the dependency, e.g. "v1".
	APIVersion string `json:"apiVersion"`

	// Kind of the dependency, e.g. "ConfigMap".
	Kind string `json:"kind"`

	// Namespace of the dependency; empty for a cluster-scoped one.
	Namespace string `json:"namespace,omitempty"`

	// Name of the dependency; empty when LabelSelector is set.
	Name string `json:"name,omitempty"`

	// LabelSelector selects the dependencies when Name is empty.
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
}
