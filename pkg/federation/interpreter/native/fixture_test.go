package native

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/interpretertest"
)

func TestFixtures(t *testing.T) {
	fixtures, err := interpretertest.Load("testdata")
	if err != nil {
		t.Fatal(err)
	}
	interpretertest.Run(t, New(), fixtures)

	// Every kind and operation the interpreter handles has a fixture.
	covered := map[interpreter.Operation]map[schema.GroupVersionKind]bool{}
	for _, fx := range fixtures {
		obj := fx.DesiredObj
		if obj == nil {
			obj = fx.ObservedObj
		}
		if covered[fx.Operation] == nil {
			covered[fx.Operation] = map[schema.GroupVersionKind]bool{}
		}
		covered[fx.Operation][obj.GroupVersionKind()] = true
	}
	for op, kinds := range handledKinds() {
		for _, gvk := range kinds {
			if !covered[op][gvk] {
				t.Errorf("no fixture for %s of %s", op, gvk)
			}
		}
	}
}

func handledKinds() map[interpreter.Operation][]schema.GroupVersionKind {
	out := map[interpreter.Operation][]schema.GroupVersionKind{}
	add := func(op interpreter.Operation, gvk schema.GroupVersionKind) { out[op] = append(out[op], gvk) }
	for gvk := range replicaFuncs {
		add(interpreter.InterpretReplica, gvk)
	}
	for gvk := range reviseFuncs {
		add(interpreter.ReviseReplica, gvk)
	}
	for gvk := range retainFuncs {
		add(interpreter.Retain, gvk)
	}
	for gvk := range aggregateFuncs {
		add(interpreter.AggregateStatus, gvk)
	}
	for gvk := range reflectFuncs {
		add(interpreter.InterpretStatus, gvk)
	}
	for gvk := range healthFuncs {
		add(interpreter.InterpretHealth, gvk)
	}
	for gvk := range dependencyFuncs {
		add(interpreter.InterpretDependency, gvk)
	}
	return out
}
