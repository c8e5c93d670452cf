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

// TestScheduleSpreadWithRoom: when replicas are divided by room (dynamic weights, aggregated), the spread
// constraints choose clusters whose room (free room plus the replicas they have; a cluster closed to new replicas,
// only those it has) adds up to the replicas: the most preferred such choice, keeping clusters of the previous
// result where it can. When no choice has the room, the most preferred one is taken, and its division says what
// is missing. Other divisions choose as before, room or not.
func TestScheduleSpreadWithRoom(t *testing.T) {
	byCluster := func(maxGroups int32) []policyv1alpha1.SpreadConstraint {
		return []policyv1alpha1.SpreadConstraint{{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MinGroups: 1, MaxGroups: maxGroups}}
	}
	placement := func(rs *policyv1alpha1.ReplicaSchedulingStrategy, sc []policyv1alpha1.SpreadConstraint) *policyv1alpha1.Placement {
		return &policyv1alpha1.Placement{ReplicaScheduling: rs, SpreadConstraints: sc}
	}
	small2, roomy := []Cluster{cluster("a", free(1)), cluster("b", free(1)), cluster("c", free(20))}, targets("a", 1, "b", 1)
	runSchedule(t, []scheduleCase{
		{
			name: "dynamic weights, 2 clusters: a scale-up past the previous clusters' room keeps one, adds the roomy one",
			in:   Input{Replicas: 10, Now: now, Settled: true, Placement: placement(dynamicWeights, byCluster(2)), Clusters: small2, Previous: roomy},
			want: targets("a", 1, "c", 9),
		},
		{
			name: "aggregated, 2 clusters: the same",
			in:   Input{Replicas: 10, Now: now, Settled: true, Placement: placement(aggregate, byCluster(2)), Clusters: small2, Previous: roomy},
			want: targets("a", 2, "c", 8),
		},
		{
			name: "aggregated, 1 cluster: a workload that outgrows its cluster moves to one with room for all of it",
			in: Input{Replicas: 6, Now: now, Settled: true, Placement: placement(aggregate, byCluster(1)),
				Clusters: []Cluster{cluster("a", free(1)), cluster("b", free(50))}, Previous: targets("a", 3)},
			want: targets("b", 6),
		},
		{
			name: "dynamic weights, 2 clusters: a not-ready cluster's room is only what it has",
			in: Input{Replicas: 8, Now: now, Settled: true, Placement: placement(dynamicWeights, byCluster(2)),
				Clusters: []Cluster{cluster("a", notReady, free(10)), cluster("b", free(0)), cluster("c", free(50))},
				Previous: targets("a", 2, "b", 2)},
			want: targets("a", 2, "c", 6),
		},
		{
			name: "dynamic weights, region and 2 clusters: the choice covering both regions with room",
			in: Input{Replicas: 38, Now: now, Placement: placement(dynamicWeights, []policyv1alpha1.SpreadConstraint{
				{SpreadByField: policyv1alpha1.SpreadByFieldRegion, MinGroups: 2, MaxGroups: 2},
				{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MaxGroups: 2}}),
				Clusters: []Cluster{cluster("a1", region("r1"), free(25)), cluster("a2", region("r1"), free(20)),
					cluster("b1", region("r2"), free(15)), cluster("b2", region("r2"), free(10))},
				Previous: targets("b2", 1)},
			want: targets("a1", 24, "b1", 14),
		},
		{
			name: "dynamic weights, 1 region: the previous region lacks the room, the other has it",
			in: Input{Replicas: 6, Now: now, Placement: placement(dynamicWeights, []policyv1alpha1.SpreadConstraint{
				{SpreadByField: policyv1alpha1.SpreadByFieldRegion, MaxGroups: 1}}),
				Clusters: []Cluster{cluster("a", region("eu"), free(1)), cluster("b", region("us"), free(20))},
				Previous: targets("a", 2)},
			want: targets("b", 6),
		},
		{
			name: "dynamic weights, 2 clusters: no two have the room; the preferred two say what is missing",
			in: Input{Replicas: 10, Now: now, Placement: placement(dynamicWeights, byCluster(2)),
				Clusters: []Cluster{cluster("a", free(1)), cluster("b", free(1)), cluster("c", free(3))}, Previous: roomy},
			wantError: []string{"the clusters have room for 2 more replicas, 8 are needed"},
		},
		{
			name: "static weights, 2 clusters: room is no part of the choice",
			in: Input{Replicas: 10, Now: now, Placement: placement(static("a", 1, "b", 1, "c", 1), byCluster(2)),
				Clusters: small2, Previous: roomy},
			want: targets("a", 5, "b", 5),
		},
	})
}
