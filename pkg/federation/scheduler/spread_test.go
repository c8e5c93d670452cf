package scheduler

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
)

func TestCombinations(t *testing.T) {
	for _, tc := range []struct {
		n, k int
		want string
	}{
		{n: 4, k: 2, want: "[0 1] [0 2] [0 3] [1 2] [1 3] [2 3]"},
		{n: 3, k: 3, want: "[0 1 2]"},
		{n: 3, k: 0, want: "[]"},
		{n: 2, k: 3, want: ""},
	} {
		var got []string
		for c := range combinations(tc.n, tc.k) {
			got = append(got, fmt.Sprint(c))
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("combinations(%d, %d) = %q, want %q", tc.n, tc.k, got, tc.want)
		}
	}
}

// TestSpreadSearchIsBounded: with 40 clusters, 20 allowed and groups no 20 of them cover, the search gives up
// within its budget with the preferred choice's error.
func TestSpreadSearchIsBounded(t *testing.T) {
	var clusters []Cluster
	for i := range 40 {
		clusters = append(clusters, cluster(fmt.Sprintf("c%02d", i), withLabels("rack", fmt.Sprint(i))))
	}
	s := &spreadSearch{byGroup: []policyv1alpha1.SpreadConstraint{{SpreadByLabel: "rack", MinGroups: 30}},
		byCluster: []policyv1alpha1.SpreadConstraint{{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MaxGroups: 20}}, budget: searchBudget}
	_, err := s.narrow(slices.Clone(clusters), 0)
	if err == nil || !strings.Contains(err.Error(), "allows at most 20 clusters: no 20 of them that cover the groups the other spread constraints need were found in 10000 tries") || s.budget >= 0 {
		t.Errorf("err %v, budget left %d", err, s.budget)
	}
}
