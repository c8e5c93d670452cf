package declarative

import (
	"context"
	"errors"
	"fmt"
	"strings"

	lua "github.com/yuin/gopher-lua"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
)

// rule is one script of a customization: the operation, the Lua function and the field it is under.
type rule struct {
	op    interpreter.Operation
	fn    string
	field string
	src   string
}

// rules lists the scripts c defines, in the order of interpreter.Operations.
func rules(c *configv1alpha1.ResourceInterpreterCustomization) []rule {
	r := &c.Spec.Customizations
	var out []rule
	add := func(set bool, op interpreter.Operation, fn, field string, src func() string) {
		if set {
			out = append(out, rule{op: op, fn: fn, field: field, src: src()})
		}
	}
	add(r.ReplicaResource != nil, interpreter.InterpretReplica, "GetReplicas", "replicaResource", func() string { return r.ReplicaResource.LuaScript })
	add(r.ComponentResource != nil, interpreter.InterpretComponent, "GetComponents", "componentResource", func() string { return r.ComponentResource.LuaScript })
	add(r.ReplicaRevision != nil, interpreter.ReviseReplica, "ReviseReplica", "replicaRevision", func() string { return r.ReplicaRevision.LuaScript })
	add(r.Retention != nil, interpreter.Retain, "Retain", "retention", func() string { return r.Retention.LuaScript })
	add(r.StatusAggregation != nil, interpreter.AggregateStatus, "AggregateStatus", "statusAggregation", func() string { return r.StatusAggregation.LuaScript })
	add(r.StatusReflection != nil, interpreter.InterpretStatus, "ReflectStatus", "statusReflection", func() string { return r.StatusReflection.LuaScript })
	add(r.HealthInterpretation != nil, interpreter.InterpretHealth, "InterpretHealth", "healthInterpretation", func() string { return r.HealthInterpretation.LuaScript })
	add(r.DependencyInterpretation != nil, interpreter.InterpretDependency, "GetDependencies", "dependencyInterpretation", func() string { return r.DependencyInterpretation.LuaScript })
	return out
}

func compileRule(c *configv1alpha1.ResourceInterpreterCustomization, r rule) (*script, error) {
	name := fmt.Sprintf("%s/%s.%s", c.Spec.Target.APIVersion, c.Spec.Target.Kind, r.field)
	if c.Name != "" {
		name = c.Name + ":" + r.field
	}
	proto, err := compile(name, r.src)
	if err != nil {
		return nil, err
	}
	return &script{name: name, fn: r.fn, proto: proto}, nil
}

// Validate checks one customization: it has a target and at least one script, and every script compiles and,
// run in the sandbox, defines its function. Lua errors carry the script's field and line, e.g.
// "my-ric:retention line:3(column:9) near 'then': syntax error".
func Validate(c *configv1alpha1.ResourceInterpreterCustomization) error {
	var errs []error
	if c.Spec.Target.APIVersion == "" || c.Spec.Target.Kind == "" {
		errs = append(errs, fmt.Errorf("spec.target needs apiVersion and kind"))
	}
	rs := rules(c)
	if len(rs) == 0 {
		errs = append(errs, fmt.Errorf("spec.customizations defines no script"))
	}
	for _, r := range rs {
		s, err := compileRule(c, r)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := defines(s); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// defines runs s's chunk, without calling its function, to check that it defines it.
func defines(s *script) error {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultTimeout)
	defer cancel()
	sb := newSandbox()
	L := sb.L
	defer L.Close()
	env := sb.begin()
	m := newMeter(ctx, sb, DefaultMemoryLimit)
	defer m.stop()
	L.SetContext(m)
	chunk := L.NewFunctionFromProto(s.proto)
	chunk.Env = env
	L.Push(chunk)
	if err := L.PCall(0, 0, nil); err != nil {
		return callError(m, s, DefaultTimeout, err)
	}
	if _, ok := env.RawGetString(s.fn).(*lua.LFunction); !ok {
		return fmt.Errorf("%s: the script does not define function %s", s.name, s.fn)
	}
	return nil
}

// ValidateSet validates each customization and refuses two that define a script for the same operation of the
// same kind.
func ValidateSet(cs []configv1alpha1.ResourceInterpreterCustomization) error {
	var errs []error
	owner := map[key]string{}
	for i := range cs {
		c := &cs[i]
		if err := Validate(c); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", describe(c), err))
		}
		for _, r := range rules(c) {
			k := key{c.Spec.Target.APIVersion, c.Spec.Target.Kind, r.op}
			if prev, ok := owner[k]; ok {
				errs = append(errs, fmt.Errorf("%s and %s both define %s (%s) for %s, %s", prev, describe(c), r.op, r.field, k.apiVersion, k.kind))
				continue
			}
			owner[k] = describe(c)
		}
	}
	return errors.Join(errs...)
}

func describe(c *configv1alpha1.ResourceInterpreterCustomization) string {
	if c.Name != "" {
		return fmt.Sprintf("customization %q", c.Name)
	}
	return fmt.Sprintf("customization of %s", strings.TrimPrefix(c.Spec.Target.APIVersion+"/"+c.Spec.Target.Kind, "/"))
}

// Operations lists the operations c has a script for, in the order of interpreter.Operations.
func Operations(c *configv1alpha1.ResourceInterpreterCustomization) []interpreter.Operation {
	var ops []interpreter.Operation
	for _, r := range rules(c) {
		ops = append(ops, r.op)
	}
	return ops
}

// Scripts are the Lua sources of c's scripts, by operation.
func Scripts(c *configv1alpha1.ResourceInterpreterCustomization) map[interpreter.Operation]string {
	out := map[interpreter.Operation]string{}
	for _, r := range rules(c) {
		out[r.op] = r.src
	}
	return out
}

// Conflicts reports the operations c defines for its target that one of others, a customization with another name,
// already defines for the same target; nil when there are none.
func Conflicts(c *configv1alpha1.ResourceInterpreterCustomization, others []configv1alpha1.ResourceInterpreterCustomization) error {
	mine := map[interpreter.Operation]string{}
	for _, r := range rules(c) {
		mine[r.op] = r.field
	}
	var errs []error
	for i := range others {
		o := &others[i]
		if o.Name == c.Name || o.Spec.Target != c.Spec.Target {
			continue
		}
		for _, r := range rules(o) {
			if field, ok := mine[r.op]; ok {
				errs = append(errs, fmt.Errorf("%s (%s) for %s, %s is already defined by %s", r.op, field,
					c.Spec.Target.APIVersion, c.Spec.Target.Kind, describe(o)))
			}
		}
	}
	return errors.Join(errs...)
}
