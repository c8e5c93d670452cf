package webhook

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
)

// Changed is what next may answer differently from prev: what the rules of every webhook that came, went or
// changed (its rules, client configuration, timeout) select, before and after. A webhook that came may take calls
// from a later one, and one that went hands them to the next; either way the calls its rules select are the ones
// that change. A rule with a wildcard group or kind affects every kind for its operations.
func Changed(prev, next *Interpreter) interpreter.Affected {
	before, after := byKey(prev), byKey(next)
	var a interpreter.Affected
	for k, h := range after {
		if old, ok := before[k]; !ok || !equality.Semantic.DeepEqual(old.spec, h.spec) {
			addRules(&a, h.rules)
			if ok {
				addRules(&a, old.rules)
			}
		}
	}
	for k, h := range before {
		if _, ok := after[k]; !ok {
			addRules(&a, h.rules)
		}
	}
	return a
}

func byKey(in *Interpreter) map[string]*hook {
	out := map[string]*hook{}
	if in == nil {
		return out
	}
	for _, h := range in.hooks {
		out[h.key()] = h
	}
	return out
}

// addRules notes the operations and kinds rules select, whatever the version.
func addRules(a *interpreter.Affected, rules []configv1alpha1.RuleWithOperations) {
	for _, r := range rules {
		for _, op := range interpreter.Operations {
			if !matchesOne(r.Operations, op) {
				continue
			}
			if slices.Contains(r.APIGroups, "*") || slices.Contains(r.Kinds, "*") {
				a.AddEvery(op)
				continue
			}
			for _, g := range r.APIGroups {
				for _, k := range r.Kinds {
					a.Add(op, schema.GroupKind{Group: g, Kind: k})
				}
			}
		}
	}
}
