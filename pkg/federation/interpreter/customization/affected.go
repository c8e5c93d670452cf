package customization

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/declarative"
)

// Changed is what serving next instead of prev, two sets Select chose, may answer differently: each operation of
// each target whose script came, went or changed. A customization renamed with the same scripts changes nothing.
func Changed(prev, next []configv1alpha1.ResourceInterpreterCustomization) interpreter.Affected {
	before, after := scriptsOf(prev), scriptsOf(next)
	var a interpreter.Affected
	for k, src := range after {
		if old, ok := before[k]; !ok || old != src {
			a.Add(k.op, k.groupKind())
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			a.Add(k.op, k.groupKind())
		}
	}
	return a
}

// scriptKey is one script of a set: Select serves at most one per operation of a target.
type scriptKey struct {
	apiVersion, kind string
	op               interpreter.Operation
}

func (k scriptKey) groupKind() schema.GroupKind {
	gv, err := schema.ParseGroupVersion(k.apiVersion)
	if err != nil {
		// Validate refuses such a target; keep it apart from every real kind.
		return schema.GroupKind{Group: k.apiVersion, Kind: k.kind}
	}
	return schema.GroupKind{Group: gv.Group, Kind: k.kind}
}

func scriptsOf(set []configv1alpha1.ResourceInterpreterCustomization) map[scriptKey]string {
	out := map[scriptKey]string{}
	for i := range set {
		t := set[i].Spec.Target
		for op, src := range declarative.Scripts(&set[i]) {
			out[scriptKey{t.APIVersion, t.Kind, op}] = src
		}
	}
	return out
}
