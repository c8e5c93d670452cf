package scenarios

import (
	"slices"
	"testing"

	"github.com/fedmesh/fedmesh/pkg/canary"
)

func TestProbeNamespacesIncludeTheCanarysShare(t *testing.T) {
	taken := canary.PercentSet(canaryStep().Steps[0].Percent)
	for _, tc := range []struct{ namespaces, probes int }{{1000, 30}, {100, 30}, {10, 10}} {
		all := podNamespaces(tc.namespaces)
		got := probeNamespaces(all, tc.probes)
		if len(got) != tc.probes {
			t.Errorf("%d of %d: picked %d", tc.probes, tc.namespaces, len(got))
		}
		in := 0
		for _, ns := range got {
			if taken.ContainsNamespace(ns) {
				in++
			}
		}
		available := len(slices.DeleteFunc(slices.Clone(all), func(ns string) bool { return !taken.ContainsNamespace(ns) }))
		if want := min(available, tc.probes/2); in != want {
			t.Errorf("%d of %d: %d the canary takes, want %d", tc.probes, tc.namespaces, in, want)
		}
		slices.Sort(got)
		if len(slices.Compact(got)) != tc.probes {
			t.Errorf("%d of %d: a namespace picked twice", tc.probes, tc.namespaces)
		}
	}
}
