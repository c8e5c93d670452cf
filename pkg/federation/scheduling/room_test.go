package scheduling

import (
	"maps"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestRoomMemory(t *testing.T) {
	a, b := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}
	var m roomMemory
	waiting := func(cluster string) []string {
		var out []string
		for key := range maps.Keys(m.on(cluster)) {
			out = append(out, key.Name)
		}
		slices.Sort(out)
		return out
	}
	for _, step := range []struct {
		name   string
		do     func()
		onX    []string
		onY    []string
		stored int
	}{
		{"nothing yet", func() {}, nil, nil, 0},
		{"a being decided: waits on every cluster", func() { m.waitAll(a) }, []string{"a"}, []string{"a"}, 1},
		{"a left off x for room", func() { m.set(a, []string{"x"}) }, []string{"a"}, nil, 1},
		{"b placed everywhere it could be", func() { m.waitAll(b); m.set(b, nil) }, []string{"a"}, nil, 1},
		{"a forgotten", func() { m.set(a, nil) }, nil, nil, 0},
	} {
		step.do()
		if got := waiting("x"); !slices.Equal(got, step.onX) {
			t.Errorf("%s: waiting on x %v, want %v", step.name, got, step.onX)
		}
		if got := waiting("y"); !slices.Equal(got, step.onY) {
			t.Errorf("%s: waiting on y %v, want %v", step.name, got, step.onY)
		}
		if len(m.waiting) != step.stored {
			t.Errorf("%s: %d bindings remembered, want %d", step.name, len(m.waiting), step.stored)
		}
	}
}
