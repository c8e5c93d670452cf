package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	jsonpatch "github.com/evanphx/json-patch/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
)

// Interpreter answers the operations some webhook's rules select, by calling the first such webhook in the order
// of "<configuration name>/<webhook name>" as strings, as Karmada does (so "team-b/w" comes before "team/w", and a
// configuration's webhooks go by name, not by their place in its list). It is safe for concurrent use.
type Interpreter struct {
	hooks []*hook // in calling order
}

var _ interpreter.Interpreter = &Interpreter{}

// New builds the webhooks of configs; it fails on a webhook it cannot call (no usable URL or service, a bad CA
// bundle, no context version in common), naming it.
func New(configs []configv1alpha1.ResourceInterpreterWebhookConfiguration) (*Interpreter, error) {
	in := &Interpreter{}
	var errs []error
	for i := range configs {
		c := &configs[i]
		for k := range c.Webhooks {
			h, err := newHook(c.Name, &c.Webhooks[k])
			if err != nil {
				errs = append(errs, err)
				continue
			}
			in.hooks = append(in.hooks, h)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	in.sortHooks()
	return in, nil
}

// Merge is an interpreter asking the webhooks of every part, in the order New gives them.
func Merge(parts ...*Interpreter) *Interpreter {
	out := &Interpreter{}
	for _, p := range parts {
		out.hooks = append(out.hooks, p.hooks...)
	}
	out.sortHooks()
	return out
}

// sortHooks puts the hooks in calling order; stable, so that hooks of one key keep the order they came in.
func (i *Interpreter) sortHooks() {
	sort.SliceStable(i.hooks, func(a, b int) bool { return i.hooks[a].key() < i.hooks[b].key() })
}

// Handles reports whether a webhook's rules select op on gvk.
func (i *Interpreter) Handles(gvk schema.GroupVersionKind, op interpreter.Operation) bool {
	return i.find(gvk, op) != nil
}

func (i *Interpreter) find(gvk schema.GroupVersionKind, op interpreter.Operation) *hook {
	for _, h := range i.hooks {
		if Matches(h.rules, gvk, op) {
			return h
		}
	}
	return nil
}

// call asks the first matching webhook.
func (i *Interpreter) call(ctx context.Context, op interpreter.Operation, obj *unstructured.Unstructured, fill func(*ResourceInterpreterRequest)) (*ResourceInterpreterResponse, error) {
	if obj == nil {
		return nil, fmt.Errorf("%s: no object", op)
	}
	h := i.find(obj.GroupVersionKind(), op)
	if h == nil {
		return nil, interpreter.Unsupported(obj, op)
	}
	return h.call(ctx, op, obj, fill)
}

// InterpretReplica reads replicas and replicaRequirements from the answer.
func (i *Interpreter) InterpretReplica(ctx context.Context, obj *unstructured.Unstructured) (int32, *workv1alpha1.ReplicaRequirements, error) {
	resp, err := i.call(ctx, interpreter.InterpretReplica, obj, nil)
	if err != nil {
		return 0, nil, err
	}
	if resp.Replicas == nil || *resp.Replicas < 0 {
		return 0, nil, fmt.Errorf("%s: the answer has no replicas", i.find(obj.GroupVersionKind(), interpreter.InterpretReplica))
	}
	return *resp.Replicas, resp.ReplicaRequirements, nil
}

// InterpretComponent reads components from the answer.
func (i *Interpreter) InterpretComponent(ctx context.Context, obj *unstructured.Unstructured) ([]interpreter.Component, error) {
	resp, err := i.call(ctx, interpreter.InterpretComponent, obj, nil)
	if err != nil {
		return nil, err
	}
	return append([]interpreter.Component{}, resp.Components...), nil
}

// ReviseReplica sends replicas and applies the answer's patch to obj.
func (i *Interpreter) ReviseReplica(ctx context.Context, obj *unstructured.Unstructured, replicas int32) (*unstructured.Unstructured, error) {
	resp, err := i.call(ctx, interpreter.ReviseReplica, obj, func(r *ResourceInterpreterRequest) { r.DesiredReplicas = &replicas })
	if err != nil {
		return nil, err
	}
	return patched(obj, resp)
}

// Retain sends observed too and applies the answer's patch to desired.
func (i *Interpreter) Retain(ctx context.Context, desired, observed *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if observed == nil {
		return nil, fmt.Errorf("%s: no observed object", interpreter.Retain)
	}
	raw, err := json.Marshal(observed.Object)
	if err != nil {
		return nil, err
	}
	resp, err := i.call(ctx, interpreter.Retain, desired, func(r *ResourceInterpreterRequest) {
		r.ObservedObject = &runtime.RawExtension{Raw: raw}
	})
	if err != nil {
		return nil, err
	}
	return patched(desired, resp)
}

// AggregateStatus sends the status items and applies the answer's patch to obj.
func (i *Interpreter) AggregateStatus(ctx context.Context, obj *unstructured.Unstructured, items []workv1alpha1.AggregatedStatusItem) (*unstructured.Unstructured, error) {
	resp, err := i.call(ctx, interpreter.AggregateStatus, obj, func(r *ResourceInterpreterRequest) {
		r.AggregatedStatus = items
	})
	if err != nil {
		return nil, err
	}
	return patched(obj, resp)
}

// InterpretStatus reads rawStatus from the answer; nil when there is none.
func (i *Interpreter) InterpretStatus(ctx context.Context, obj *unstructured.Unstructured) (*runtime.RawExtension, error) {
	resp, err := i.call(ctx, interpreter.InterpretStatus, obj, nil)
	if err != nil || resp.RawStatus == nil || len(resp.RawStatus.Raw) == 0 || string(resp.RawStatus.Raw) == "null" {
		return nil, err
	}
	return resp.RawStatus, nil
}

// InterpretHealth reads healthy from the answer.
func (i *Interpreter) InterpretHealth(ctx context.Context, obj *unstructured.Unstructured) (bool, error) {
	resp, err := i.call(ctx, interpreter.InterpretHealth, obj, nil)
	if err != nil {
		return false, err
	}
	if resp.Healthy == nil {
		return false, fmt.Errorf("%s: the answer has no healthy", i.find(obj.GroupVersionKind(), interpreter.InterpretHealth))
	}
	return *resp.Healthy, nil
}

// InterpretDependency reads dependencies from the answer.
func (i *Interpreter) InterpretDependency(ctx context.Context, obj *unstructured.Unstructured) ([]interpreter.DependentObjectReference, error) {
	resp, err := i.call(ctx, interpreter.InterpretDependency, obj, nil)
	if err != nil {
		return nil, err
	}
	return append([]interpreter.DependentObjectReference{}, resp.Dependencies...), nil
}

// patched is a copy of obj with the answer's JSON patch applied; an answer without a patch leaves it as it is.
func patched(obj *unstructured.Unstructured, resp *ResourceInterpreterResponse) (*unstructured.Unstructured, error) {
	if len(resp.Patch) == 0 {
		return obj.DeepCopy(), nil
	}
	if resp.PatchType == nil || *resp.PatchType != PatchTypeJSONPatch {
		return nil, fmt.Errorf("the answer's patchType is %v, want %s", ptrString(resp.PatchType), PatchTypeJSONPatch)
	}
	p, err := jsonpatch.DecodePatch(resp.Patch)
	if err != nil {
		return nil, fmt.Errorf("the answer's patch: %w", err)
	}
	raw, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, err
	}
	if raw, err = p.Apply(raw); err != nil {
		return nil, fmt.Errorf("applying the answer's patch: %w", err)
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("the patched object: %w", err)
	}
	return out, nil
}

func ptrString(s *string) string {
	if s == nil {
		return "unset"
	}
	return fmt.Sprintf("%q", *s)
}

func metav1GVK(group, version, kind string) metav1.GroupVersionKind {
	return metav1.GroupVersionKind{Group: group, Version: version, Kind: kind}
}

func contextTypeMeta() metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: ContextAPIVersion, Kind: ContextKind}
}
