package interpreter

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Affected names what a users' layer may answer differently since its set was swapped: for each operation, the
// kinds whose script or webhook changed, came or went, or every kind (a webhook rule with a wildcard). Kinds go by
// group and kind, whatever the version: a stage re-run for a version the change did not touch costs one pass,
// while one missed leaves an object interpreted by the old set until something else touches it. The zero value
// affects nothing.
type Affected struct {
	ops map[Operation]*affectedKinds
}

type affectedKinds struct {
	every bool
	kinds map[schema.GroupKind]bool
}

// Add notes that op may answer differently for kind gk.
func (a *Affected) Add(op Operation, gk schema.GroupKind) {
	k := a.of(op)
	if k.kinds == nil {
		k.kinds = map[schema.GroupKind]bool{}
	}
	k.kinds[gk] = true
}

// AddEvery notes that op may answer differently for every kind.
func (a *Affected) AddEvery(op Operation) { a.of(op).every = true }

func (a *Affected) of(op Operation) *affectedKinds {
	if a.ops == nil {
		a.ops = map[Operation]*affectedKinds{}
	}
	k, ok := a.ops[op]
	if !ok {
		k = &affectedKinds{}
		a.ops[op] = k
	}
	return k
}

// Empty reports whether nothing is affected.
func (a Affected) Empty() bool { return len(a.ops) == 0 }

// Matches reports whether any of ops may answer differently for kind gk.
func (a Affected) Matches(gk schema.GroupKind, ops ...Operation) bool {
	for _, op := range ops {
		if k, ok := a.ops[op]; ok && (k.every || k.kinds[gk]) {
			return true
		}
	}
	return false
}

// String lists the operations and their kinds, for logs, e.g. "AggregateStatus: Deployment.apps; Retain: every
// kind".
func (a Affected) String() string {
	var parts []string
	for _, op := range Operations {
		k, ok := a.ops[op]
		if !ok {
			continue
		}
		if k.every {
			parts = append(parts, fmt.Sprintf("%s: every kind", op))
			continue
		}
		var kinds []string
		for gk := range k.kinds {
			kinds = append(kinds, gk.String())
		}
		sort.Strings(kinds)
		parts = append(parts, fmt.Sprintf("%s: %s", op, strings.Join(kinds, ", ")))
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, "; ")
}
