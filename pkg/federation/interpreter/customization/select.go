package customization

import (
	"fmt"
	"sort"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/declarative"
)

// Refusal is a customization whose current version is not served, and why.
type Refusal struct {
	// Name of the customization.
	Name string
	// Generation of the refused version.
	Generation int64
	// Err says why: the Lua error with its line, or the conflict.
	Err error
	// Fallback is true when the last good version of the customization serves instead.
	Fallback bool
}

// Select chooses the customizations to serve from current, those in the host, and lastGood, the last version of
// each (by name) that was served. A customization whose current version does not validate is refused, and its last
// good version serves instead if it has one. Customizations are taken oldest first, so when two define the same
// operation for the same kind the older one keeps it (the one already serving, when both were created in the same
// second) and the newer is refused (or falls back likewise). Select does no I/O; it compiles the scripts.
func Select(current []configv1alpha1.ResourceInterpreterCustomization, lastGood map[string]configv1alpha1.ResourceInterpreterCustomization) (serve []configv1alpha1.ResourceInterpreterCustomization, refused []Refusal) {
	ordered := append([]configv1alpha1.ResourceInterpreterCustomization(nil), current...)
	sort.SliceStable(ordered, func(i, j int) bool {
		a, b := &ordered[i], &ordered[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		// Timestamps have whole seconds: of two created in the same second, the one already serving stays.
		if _, aServes := lastGood[a.Name]; aServes != hasKey(lastGood, b.Name) {
			return aServes
		}
		return a.Name < b.Name
	})
	for i := range ordered {
		c := &ordered[i]
		err := declarative.Validate(c)
		if err == nil {
			if err = declarative.Conflicts(c, serve); err == nil {
				serve = append(serve, *c)
				continue
			}
			err = fmt.Errorf("conflicts with an older customization: %w", err)
		}
		r := Refusal{Name: c.Name, Generation: c.Generation, Err: err}
		if prev, ok := lastGood[c.Name]; ok && prev.Generation != c.Generation && declarative.Conflicts(&prev, serve) == nil {
			serve = append(serve, prev)
			r.Fallback = true
		}
		refused = append(refused, r)
	}
	return serve, refused
}

func hasKey(m map[string]configv1alpha1.ResourceInterpreterCustomization, k string) bool {
	_, ok := m[k]
	return ok
}
