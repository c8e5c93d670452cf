package execution

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
)

// serverMetadata are the fields of an object's own metadata that the server sets, whatever an apply says.
var serverMetadata = []string{"resourceVersion", "uid", "generation", "creationTimestamp", "managedFields"}

// needsApply decides whether desired (the manifest as it would be applied: identity set, member fields retained)
// must be applied to observed, its object in the member (nil when there is none), and says why; applied is the
// Work's Applied condition as its last apply judged it (written or on its way). An apply it spares
// is a member write spared on every reconcile that finds nothing to do, as after a restart, which requeues every
// Work; an apply it misses is drift left in place, so whatever it cannot be sure of counts as different.
//
// No apply is needed only when both hold:
//   - the Work is Applied at its current generation: what it holds now was applied in full before. A Work changed
//     since is always applied, however the member looks, since only an apply prunes the fields a new generation
//     dropped, and those are invisible in a comparison with the new manifest;
//   - observed already holds every field of desired with its value (contains), and is fedmesh's own: not being
//     deleted, and with fields applied by fedmesh's field manager (an identical object someone else created must
//     still be taken over).
func needsApply(work *workv1alpha1.Work, c *metav1.Condition, desired, observed *unstructured.Unstructured) (bool, string) {
	switch {
	case c == nil || c.Status != metav1.ConditionTrue:
		return true, "the Work is not applied yet"
	case c.ObservedGeneration != work.Generation:
		return true, fmt.Sprintf("the Work changed since it was applied (generation %d, applied %d)", work.Generation, c.ObservedGeneration)
	case observed == nil:
		return true, "not in the member"
	case observed.GetDeletionTimestamp() != nil:
		return true, "being deleted in the member"
	case !appliedBy(observed, names.FieldManager):
		return true, "not applied by " + names.FieldManager
	}
	if path, ok := contains(withoutServerMetadata(desired.Object), observed.Object); !ok {
		return true, "differs at " + strings.TrimPrefix(path, ".")
	}
	return false, ""
}

// appliedBy reports whether manager owns fields of obj itself (not of a subresource) through an apply.
func appliedBy(obj *unstructured.Unstructured, manager string) bool {
	for _, f := range obj.GetManagedFields() {
		if f.Manager == manager && f.Operation == metav1.ManagedFieldsOperationApply && f.Subresource == "" {
			return true
		}
	}
	return false
}

// withoutServerMetadata is obj without serverMetadata; obj is not changed.
func withoutServerMetadata(obj map[string]any) map[string]any {
	md, ok := obj["metadata"].(map[string]any)
	if !ok {
		return obj
	}
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	mdOut := make(map[string]any, len(md))
	for k, v := range md {
		mdOut[k] = v
	}
	for _, f := range serverMetadata {
		delete(mdOut, f)
	}
	out["metadata"] = mdOut
	return out
}

// contains reports whether the JSON value observed holds everything of desired, and otherwise the path of the
// first difference. Maps are compared by key, and observed may have more (defaults, status, other managers'
// fields); a null in desired is held by a missing or null field, since an applied null sets nothing. Lists are
// compared element by element and must be as long: an element more in observed may be one another manager added
// or one an apply would remove, and telling those apart takes the list's schema. Numbers are compared by value,
// an int64 and a float64 alike; other scalars must be equal and of one type, so a value the server normalizes
// (a quantity "0.1" stored as "100m") is different and is applied again, which is harmless.
func contains(desired, observed any) (string, bool) {
	switch d := desired.(type) {
	case map[string]any:
		o, ok := observed.(map[string]any)
		if !ok {
			return "", false
		}
		for k, dv := range d {
			ov, has := o[k]
			if dv == nil {
				if has && ov != nil {
					return "." + k, false
				}
				continue
			}
			if !has {
				return "." + k, false
			}
			if p, ok := contains(dv, ov); !ok {
				return "." + k + p, false
			}
		}
		return "", true
	case []any:
		o, ok := observed.([]any)
		if !ok || len(o) != len(d) {
			return "", false
		}
		for i := range d {
			if p, ok := contains(d[i], o[i]); !ok {
				return fmt.Sprintf("[%d]%s", i, p), false
			}
		}
		return "", true
	case string, bool:
		return "", desired == observed
	case nil:
		return "", observed == nil
	}
	if equalNumbers(desired, observed) {
		return "", true
	}
	return "", false
}

// equalNumbers reports whether a and b are numbers of the same value. Unstructured objects hold int64 and
// float64, but an interpreter's Retain (a Lua script's numbers are floats) or a typed conversion may hand others.
func equalNumbers(a, b any) bool {
	ai, af, aok := number(a)
	bi, bf, bok := number(b)
	switch {
	case aok == 0 || bok == 0:
		return false
	case aok == isInt && bok == isInt:
		return ai == bi
	case aok == isFloat && bok == isFloat:
		return af == bf
	case aok == isInt:
		return intEqualsFloat(ai, bf)
	default:
		return intEqualsFloat(bi, af)
	}
}

const (
	isInt = iota + 1
	isFloat
)

func number(v any) (int64, float64, int) {
	switch n := v.(type) {
	case int64:
		return n, 0, isInt
	case int:
		return int64(n), 0, isInt
	case int32:
		return int64(n), 0, isInt
	case float64:
		return 0, n, isFloat
	case float32:
		return 0, float64(n), isFloat
	case json.Number:
		if i, err := n.Int64(); err == nil {
			return i, 0, isInt
		}
		if f, err := n.Float64(); err == nil {
			return 0, f, isFloat
		}
	}
	return 0, 0, 0
}

// intEqualsFloat compares exactly: f must be a whole number within int64's range (float64(i) alone would round
// a large i to a nearby f).
func intEqualsFloat(i int64, f float64) bool {
	if f != math.Trunc(f) || f < -(1<<63) || f >= 1<<63 {
		return false
	}
	return int64(f) == i
}
