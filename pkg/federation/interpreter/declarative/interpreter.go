package declarative

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	lua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
)

// Interpreter answers the operations ResourceInterpreterCustomizations define scripts for. It is safe for
// concurrent use.
type Interpreter struct {
	scripts map[key]*script
	vms     pool
	limits  limits
}

var _ interpreter.Interpreter = &Interpreter{}

type key struct {
	apiVersion, kind string
	op               interpreter.Operation
}

// New compiles the scripts of customizations; it fails on a script that does not compile or define its function,
// and on two customizations with a script for the same operation of the same kind.
func New(customizations []configv1alpha1.ResourceInterpreterCustomization) (*Interpreter, error) {
	if err := ValidateSet(customizations); err != nil {
		return nil, err
	}
	in := &Interpreter{scripts: map[key]*script{}, limits: limits{timeout: DefaultTimeout, memory: DefaultMemoryLimit}}
	for i := range customizations {
		c := &customizations[i]
		for _, r := range rules(c) {
			s, err := compileRule(c, r)
			if err != nil {
				return nil, err
			}
			in.scripts[key{c.Spec.Target.APIVersion, c.Spec.Target.Kind, r.op}] = s
		}
	}
	return in, nil
}

// WithTimeout sets the time one call of a script may take (DefaultTimeout unless set) and returns i.
func (i *Interpreter) WithTimeout(d time.Duration) *Interpreter {
	i.limits.timeout = d
	return i
}

// WithMemoryLimit sets the memory, in bytes, that one call of a script may hold (DefaultMemoryLimit unless set;
// 0 for no limit) and returns i. A call over the limit fails with a *MemoryLimitError.
func (i *Interpreter) WithMemoryLimit(bytes uint64) *Interpreter {
	i.limits.memory = bytes
	return i
}

// Handles reports whether a customization has a script for op of gvk.
func (i *Interpreter) Handles(gvk schema.GroupVersionKind, op interpreter.Operation) bool {
	_, ok := i.scripts[key{gvk.GroupVersion().String(), gvk.Kind, op}]
	return ok
}

func (i *Interpreter) script(obj *unstructured.Unstructured, op interpreter.Operation) (*script, error) {
	if obj == nil {
		return nil, fmt.Errorf("%s: no object", op)
	}
	s, ok := i.scripts[key{obj.GetAPIVersion(), obj.GetKind(), op}]
	if !ok {
		return nil, interpreter.Unsupported(obj, op)
	}
	return s, nil
}

// run calls the script for op of obj's kind with args, converted to Lua, and returns nret results.
func (i *Interpreter) run(ctx context.Context, obj *unstructured.Unstructured, op interpreter.Operation, nret int, args ...any) ([]lua.LValue, shapes, error) {
	s, err := i.script(obj, op)
	if err != nil {
		return nil, shapes{}, err
	}
	return i.vms.call(ctx, i.limits, s, nret, func(L *lua.LState, arrays shapes) []lua.LValue {
		out := make([]lua.LValue, len(args))
		for k, a := range args {
			out[k] = toLua(L, a, arrays, "")
		}
		return out
	})
}

// InterpretReplica calls GetReplicas(desiredObj), which returns the replicas and the requirements of one.
func (i *Interpreter) InterpretReplica(ctx context.Context, obj *unstructured.Unstructured) (int32, *workv1alpha1.ReplicaRequirements, error) {
	out, arrays, err := i.run(ctx, obj, interpreter.InterpretReplica, 2, obj.Object)
	if err != nil {
		return 0, nil, err
	}
	n, err := toInt32(out[0])
	if err != nil {
		return 0, nil, fmt.Errorf("GetReplicas returned %w", err)
	}
	if out[1] == lua.LNil {
		return n, nil, nil
	}
	var req workv1alpha1.ReplicaRequirements
	if err := decode(out[1], arrays, &req); err != nil {
		return 0, nil, fmt.Errorf("GetReplicas returned requirements that %w", err)
	}
	return n, &req, nil
}

// InterpretComponent calls GetComponents(desiredObj), which returns a list of {name, replicas,
// replicaRequirements}.
func (i *Interpreter) InterpretComponent(ctx context.Context, obj *unstructured.Unstructured) ([]interpreter.Component, error) {
	out, arrays, err := i.run(ctx, obj, interpreter.InterpretComponent, 1, obj.Object)
	if err != nil {
		return nil, err
	}
	cs := []interpreter.Component{}
	if out[0] != lua.LNil {
		asList(out[0], arrays)
		if err := decode(out[0], arrays, &cs); err != nil {
			return nil, fmt.Errorf("GetComponents returned components that %w", err)
		}
	}
	return cs, nil
}

// ReviseReplica calls ReviseReplica(desiredObj, desiredReplica), which returns the revised object.
func (i *Interpreter) ReviseReplica(ctx context.Context, obj *unstructured.Unstructured, replicas int32) (*unstructured.Unstructured, error) {
	out, arrays, err := i.run(ctx, obj, interpreter.ReviseReplica, 1, obj.Object, int64(replicas))
	if err != nil {
		return nil, err
	}
	return toObject("ReviseReplica", out[0], arrays, false)
}

// Retain calls Retain(desiredObj, observedObj), which returns desiredObj with the member's fields kept.
func (i *Interpreter) Retain(ctx context.Context, desired, observed *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if observed == nil {
		return nil, fmt.Errorf("%s: no observed object", interpreter.Retain)
	}
	out, arrays, err := i.run(ctx, desired, interpreter.Retain, 1, desired.Object, observed.Object)
	if err != nil {
		return nil, err
	}
	return toObject("Retain", out[0], arrays, false)
}

// AggregateStatus calls AggregateStatus(desiredObj, statusItems), statusItems being a list of {clusterName,
// status, applied, appliedMessage, health} or, with no items, nil; it returns desiredObj with its status set.
func (i *Interpreter) AggregateStatus(ctx context.Context, obj *unstructured.Unstructured, items []workv1alpha1.AggregatedStatusItem) (*unstructured.Unstructured, error) {
	// No member statuses is nil, as in Karmada, whose empty list goes through JSON as null: its scripts begin with
	// "if statusItems == nil then return desiredObj end", which leaves the template's status alone.
	var list any
	if len(items) > 0 {
		var err error
		if list, err = toJSONValue(items); err != nil {
			return nil, err
		}
	}
	out, arrays, err := i.run(ctx, obj, interpreter.AggregateStatus, 1, obj.Object, list)
	if err != nil {
		return nil, err
	}
	arrays.alias("*.status", "status")
	return toObject("AggregateStatus", out[0], arrays, true)
}

// InterpretStatus calls ReflectStatus(observedObj), which returns the status to record, or nil for none.
func (i *Interpreter) InterpretStatus(ctx context.Context, obj *unstructured.Unstructured) (*runtime.RawExtension, error) {
	out, arrays, err := i.run(ctx, obj, interpreter.InterpretStatus, 1, obj.Object)
	if err != nil {
		return nil, err
	}
	if out[0] == lua.LNil {
		return nil, nil
	}
	if _, ok := out[0].(*lua.LTable); !ok {
		return nil, fmt.Errorf("ReflectStatus returned a %s, want a table (or nil for no status)", out[0].Type())
	}
	v, err := fromLua(out[0], arrays, true, "status")
	if err != nil {
		return nil, fmt.Errorf("ReflectStatus returned a status that %w", err)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &runtime.RawExtension{Raw: data}, nil
}

// InterpretHealth calls InterpretHealth(observedObj), which returns a boolean.
func (i *Interpreter) InterpretHealth(ctx context.Context, obj *unstructured.Unstructured) (bool, error) {
	out, _, err := i.run(ctx, obj, interpreter.InterpretHealth, 1, obj.Object)
	if err != nil {
		return false, err
	}
	b, ok := out[0].(lua.LBool)
	if !ok {
		return false, fmt.Errorf("InterpretHealth returned a %s, want a boolean", out[0].Type())
	}
	return bool(b), nil
}

// InterpretDependency calls GetDependencies(desiredObj), which returns a list of {apiVersion, kind, namespace,
// name} (or labelSelector instead of name).
func (i *Interpreter) InterpretDependency(ctx context.Context, obj *unstructured.Unstructured) ([]interpreter.DependentObjectReference, error) {
	out, arrays, err := i.run(ctx, obj, interpreter.InterpretDependency, 1, obj.Object)
	if err != nil {
		return nil, err
	}
	deps := []interpreter.DependentObjectReference{}
	if out[0] != lua.LNil {
		asList(out[0], arrays)
		if err := decode(out[0], arrays, &deps); err != nil {
			return nil, fmt.Errorf("GetDependencies returned dependencies that %w", err)
		}
	}
	return deps, nil
}

// asList marks v, a result that must be a list, as one: an empty table is then [] (no dependencies), not {}.
func asList(v lua.LValue, arrays shapes) {
	if t, ok := v.(*lua.LTable); ok {
		arrays.tables[t] = true
	}
}

func toInt32(v lua.LValue) (int32, error) {
	n, ok := v.(lua.LNumber)
	if !ok {
		return 0, fmt.Errorf("a %s as replicas, want a number", v.Type())
	}
	f := float64(n)
	if f != float64(int32(f)) || f < 0 {
		return 0, fmt.Errorf("replicas %v, want a whole number from 0 to %d", f, int32(^uint32(0)>>1))
	}
	return int32(f), nil
}

// decode converts v into out through JSON; its errors read after "... that". Empty objects are dropped first, as
// tableInto drops them: an empty table the script made for a list (tolerations = {}) means an empty list.
func decode(v lua.LValue, arrays shapes, out any) error {
	g, err := fromLua(v, arrays, false, "")
	if err != nil {
		return fmt.Errorf("cannot be converted: %w", err)
	}
	data, err := json.Marshal(pruneEmpty(g))
	if err != nil {
		return fmt.Errorf("cannot be converted: %w", err)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("do not have the expected shape: %w", err)
	}
	return nil
}

// toObject converts the object fn returned; dropMade as fromLua has it.
func toObject(fn string, v lua.LValue, arrays shapes, dropMade bool) (*unstructured.Unstructured, error) {
	if _, ok := v.(*lua.LTable); !ok {
		return nil, fmt.Errorf("%s returned a %s, want an object", fn, v.Type())
	}
	g, err := fromLua(v, arrays, dropMade, "")
	if err != nil {
		return nil, fmt.Errorf("%s returned an object that cannot be converted: %w", fn, err)
	}
	m, ok := g.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s returned a list, want an object", fn)
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// toJSONValue turns v into maps, slices and scalars, with whole numbers as int64.
func toJSONValue(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var g any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&g); err != nil {
		return nil, err
	}
	return numbers(g), nil
}

func numbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return n
		}
		f, _ := v.Float64()
		return f
	case map[string]any:
		for k, e := range v {
			v[k] = numbers(e)
		}
	case []any:
		for k, e := range v {
			v[k] = numbers(e)
		}
	}
	return v
}
