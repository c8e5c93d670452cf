package native

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
)

// The kinds this package knows.
var (
	deploymentGVK  = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	replicaSetGVK  = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"}
	statefulSetGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}
	daemonSetGVK   = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DaemonSet"}
	jobGVK         = schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}
	cronJobGVK     = schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "CronJob"}
	podGVK         = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	serviceGVK     = schema.GroupVersionKind{Version: "v1", Kind: "Service"}
	pvcGVK         = schema.GroupVersionKind{Version: "v1", Kind: "PersistentVolumeClaim"}
	pvGVK          = schema.GroupVersionKind{Version: "v1", Kind: "PersistentVolume"}
	saGVK          = schema.GroupVersionKind{Version: "v1", Kind: "ServiceAccount"}
	secretGVK      = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	ingressGVK     = schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"}
	pdbGVK         = schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"}
	hpaV2GVK       = schema.GroupVersionKind{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"}
	hpaV1GVK       = schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "HorizontalPodAutoscaler"}
)

// Interpreter answers the operations of interpreter.Interpreter for built-in kinds. The zero value is ready.
type Interpreter struct{}

var _ interpreter.Interpreter = &Interpreter{}

// New returns the native interpreter.
func New() *Interpreter { return &Interpreter{} }

// Handles reports whether the native interpreter answers op for gvk. It handles no InterpretComponent.
func (*Interpreter) Handles(gvk schema.GroupVersionKind, op interpreter.Operation) bool {
	var ok bool
	switch op {
	case interpreter.InterpretReplica:
		_, ok = replicaFuncs[gvk]
	case interpreter.ReviseReplica:
		_, ok = reviseFuncs[gvk]
	case interpreter.Retain:
		_, ok = retainFuncs[gvk]
	case interpreter.AggregateStatus:
		_, ok = aggregateFuncs[gvk]
	case interpreter.InterpretStatus:
		_, ok = reflectFuncs[gvk]
	case interpreter.InterpretHealth:
		_, ok = healthFuncs[gvk]
	case interpreter.InterpretDependency:
		_, ok = dependencyFuncs[gvk]
	}
	return ok
}

// InterpretReplica returns the replicas and per-replica requirements of a Deployment, ReplicaSet, StatefulSet,
// Job or Pod.
func (*Interpreter) InterpretReplica(_ context.Context, obj *unstructured.Unstructured) (int32, *workv1alpha1.ReplicaRequirements, error) {
	f, ok := replicaFuncs[obj.GroupVersionKind()]
	if !ok {
		return 0, nil, interpreter.Unsupported(obj, interpreter.InterpretReplica)
	}
	n, req, err := f(obj)
	if err != nil {
		return 0, nil, wrap(obj, interpreter.InterpretReplica, err)
	}
	return n, req, nil
}

// InterpretComponent is not handled natively.
func (*Interpreter) InterpretComponent(_ context.Context, obj *unstructured.Unstructured) ([]interpreter.Component, error) {
	return nil, interpreter.Unsupported(obj, interpreter.InterpretComponent)
}

// ReviseReplica sets the replicas of a Deployment, ReplicaSet, StatefulSet, Job or Pod on a copy of obj.
func (*Interpreter) ReviseReplica(_ context.Context, obj *unstructured.Unstructured, replicas int32) (*unstructured.Unstructured, error) {
	f, ok := reviseFuncs[obj.GroupVersionKind()]
	if !ok {
		return nil, interpreter.Unsupported(obj, interpreter.ReviseReplica)
	}
	if replicas < 0 {
		return nil, wrap(obj, interpreter.ReviseReplica, fmt.Errorf("negative replicas %d", replicas))
	}
	out := obj.DeepCopy()
	if err := f(out, replicas); err != nil {
		return nil, wrap(obj, interpreter.ReviseReplica, err)
	}
	return out, nil
}

// Retain copies the member-owned fields of observed into a copy of desired.
func (*Interpreter) Retain(_ context.Context, desired, observed *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	f, ok := retainFuncs[desired.GroupVersionKind()]
	if !ok {
		return nil, interpreter.Unsupported(desired, interpreter.Retain)
	}
	out := desired.DeepCopy()
	if observed == nil {
		return out, nil
	}
	if err := f(out, observed); err != nil {
		return nil, wrap(desired, interpreter.Retain, err)
	}
	return out, nil
}

// AggregateStatus builds the status of a copy of obj from the members' reflected statuses.
func (*Interpreter) AggregateStatus(_ context.Context, obj *unstructured.Unstructured, items []workv1alpha1.AggregatedStatusItem) (*unstructured.Unstructured, error) {
	f, ok := aggregateFuncs[obj.GroupVersionKind()]
	if !ok {
		return nil, interpreter.Unsupported(obj, interpreter.AggregateStatus)
	}
	out := obj.DeepCopy()
	if err := f(out, items); err != nil {
		return nil, wrap(obj, interpreter.AggregateStatus, err)
	}
	return out, nil
}

// InterpretStatus reflects the part of a member's object that is recorded as its status.
func (*Interpreter) InterpretStatus(_ context.Context, obj *unstructured.Unstructured) (*runtime.RawExtension, error) {
	status, err := call(reflectFuncs, interpreter.InterpretStatus, obj)
	if err != nil {
		return nil, err
	}
	if status == nil {
		return nil, nil
	}
	raw, err := json.Marshal(status)
	if err != nil {
		return nil, wrap(obj, interpreter.InterpretStatus, err)
	}
	return &runtime.RawExtension{Raw: raw}, nil
}

// InterpretHealth judges a member's object.
func (*Interpreter) InterpretHealth(_ context.Context, obj *unstructured.Unstructured) (bool, error) {
	return call(healthFuncs, interpreter.InterpretHealth, obj)
}

// InterpretDependency lists the ConfigMaps, Secrets, ServiceAccounts and PersistentVolumeClaims obj refers to.
func (*Interpreter) InterpretDependency(_ context.Context, obj *unstructured.Unstructured) ([]interpreter.DependentObjectReference, error) {
	return call(dependencyFuncs, interpreter.InterpretDependency, obj)
}

// call runs the function funcs holds for obj's kind, naming op and obj in its error, or reports the kind
// unsupported for op.
func call[T any, F ~func(*unstructured.Unstructured) (T, error)](funcs map[schema.GroupVersionKind]F, op interpreter.Operation, obj *unstructured.Unstructured) (T, error) {
	var zero T
	f, ok := funcs[obj.GroupVersionKind()]
	if !ok {
		return zero, interpreter.Unsupported(obj, op)
	}
	out, err := f(obj)
	if err != nil {
		return zero, wrap(obj, op, err)
	}
	return out, nil
}

func wrap(obj *unstructured.Unstructured, op interpreter.Operation, err error) error {
	return fmt.Errorf("%s %s %s: %w", op, obj.GetKind(), key(obj), err)
}

func key(obj *unstructured.Unstructured) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}

// toTyped converts an unstructured value (an object or a part of one) into the typed out.
func toTyped(in map[string]any, out any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(in, out)
}

// toMap converts a typed value into the JSON-compatible map unstructured objects hold.
func toMap(in any) (map[string]any, error) {
	return runtime.DefaultUnstructuredConverter.ToUnstructured(in)
}

// podSpecPath is where each kind keeps the pod spec its pods are made from.
var podSpecPath = map[schema.GroupVersionKind][]string{
	deploymentGVK:  {"spec", "template", "spec"},
	replicaSetGVK:  {"spec", "template", "spec"},
	statefulSetGVK: {"spec", "template", "spec"},
	daemonSetGVK:   {"spec", "template", "spec"},
	jobGVK:         {"spec", "template", "spec"},
	cronJobGVK:     {"spec", "jobTemplate", "spec", "template", "spec"},
	podGVK:         {"spec"},
}

// podSpec is obj's pod spec, typed; empty when obj has none.
func podSpec(obj *unstructured.Unstructured) (*corev1.PodSpec, error) {
	spec := &corev1.PodSpec{}
	m, ok, err := unstructured.NestedMap(obj.Object, podSpecPath[obj.GroupVersionKind()]...)
	if err != nil || !ok {
		return spec, err
	}
	if err := toTyped(m, spec); err != nil {
		return nil, fmt.Errorf("pod spec: %w", err)
	}
	return spec, nil
}

// nestedInt reads an integer field, whichever numeric type holds it (JSON decoders differ).
func nestedInt(obj map[string]any, fields ...string) (int64, bool, error) {
	v, ok, err := unstructured.NestedFieldNoCopy(obj, fields...)
	if err != nil || !ok || v == nil {
		return 0, false, err
	}
	switch n := v.(type) {
	case int64:
		return n, true, nil
	case int32:
		return int64(n), true, nil
	case int:
		return int64(n), true, nil
	case float64:
		if n != math.Trunc(n) || math.Abs(n) > 1<<53 {
			return 0, false, fmt.Errorf("%v: %v is not an integer", fields, n)
		}
		return int64(n), true, nil
	case json.Number:
		i, err := n.Int64()
		return i, err == nil, err
	default:
		return 0, false, fmt.Errorf("%v: %T is not an integer", fields, v)
	}
}

// int32Field reads an int32 field, def when it is absent.
func int32Field(obj map[string]any, def int32, fields ...string) (int32, error) {
	n, ok, err := nestedInt(obj, fields...)
	switch {
	case err != nil:
		return 0, err
	case !ok:
		return def, nil
	case n < 0 || n > math.MaxInt32:
		return 0, fmt.Errorf("%v: %d out of range", fields, n)
	}
	return int32(n), nil
}
