package scheduler

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
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
	budget := newTries(searchBudget)
	s := &spreadSearch{byGroup: []policyv1alpha1.SpreadConstraint{{SpreadByLabel: "rack", MinGroups: 30}},
		byCluster: []policyv1alpha1.SpreadConstraint{{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MaxGroups: 20}}, budget: budget}
	_, err := s.narrow(slices.Clone(clusters), 0)
	if err == nil || !strings.Contains(err.Error(), "allows at most 20 clusters: no 20 of them that cover the groups the other spread constraints need were found in the 10000 tries the search may make") || budget.left != 0 {
		t.Errorf("err %v, budget left %d", err, budget.left)
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
	full10, on10 := fullAndRoomy(10, 30)
	zoned10, _ := fullAndRoomy(10, 30)
	for i := range zoned10 {
		zoned10[i].Zones = []string{fmt.Sprint("z", i%2)}
	}
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
			name: "dynamic weights, 10 of 40 clusters: a scale-up past the 10 full previous clusters keeps the 2 that leave room enough, adds 8 with room",
			in:   Input{Replicas: 40, Now: now, Settled: true, Placement: placement(dynamicWeights, byCluster(10)), Clusters: full10, Previous: on10},
			want: targets("m00", 1, "m01", 1, "m10", 5, "m11", 5, "m12", 5, "m13", 5, "m14", 5, "m15", 5, "m16", 4, "m17", 4),
		},
		{
			name: "dynamic weights, 2 zones and 10 of 40 clusters: the zones are covered by clusters that leave room enough",
			in: Input{Replicas: 46, Now: now, Settled: true, Placement: placement(dynamicWeights, []policyv1alpha1.SpreadConstraint{
				{SpreadByField: policyv1alpha1.SpreadByFieldZone, MinGroups: 2},
				{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MaxGroups: 10}}),
				Clusters: zoned10, Previous: on10},
			want: targets("m00", 1, "m10", 5, "m11", 5, "m12", 5, "m13", 5, "m14", 5, "m15", 5, "m16", 5, "m17", 5, "m18", 5),
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

// fullAndRoomy is full clusters m00, m01, ... (room for nothing more) with 1 replica each of the previous result,
// then roomy clusters with room for 5 each.
func fullAndRoomy(full, roomy int) ([]Cluster, []workv1alpha1.TargetCluster) {
	var clusters []Cluster
	var previous []workv1alpha1.TargetCluster
	for i := range full + roomy {
		name := fmt.Sprintf("m%02d", i)
		if i < full {
			clusters = append(clusters, cluster(name, free(0)))
			previous = append(previous, workv1alpha1.TargetCluster{Name: name, Replicas: 1})
		} else {
			clusters = append(clusters, cluster(name, free(5)))
		}
	}
	return clusters, previous
}

// TestSpreadPickQuick checks, for random rooms, that picking n clusters (count, then pick) with room finds a choice whenever trying
// every choice of n in preference order finds one; with no groups to cover, the same choice (the most preferred),
// found without a search; with racks to cover, one that covers them.
func TestSpreadPickQuick(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	searched := 0
	for range 5000 {
		var clusters []Cluster
		rooms := map[string]int64{}
		for i := range 1 + rng.IntN(8) {
			name := fmt.Sprintf("c%d", i)
			clusters = append(clusters, cluster(name, withLabels("rack", fmt.Sprint(rng.IntN(3)))))
			rooms[name] = rng.Int64N(10)
		}
		n, need := 1+rng.IntN(len(clusters)), 1+rng.Int64N(40)
		racks := rng.IntN(3) // 0: no constraint by rack
		isWanted := func(names []string) bool {
			var sum int64
			inRacks := map[string]bool{}
			for _, name := range names {
				sum += rooms[name]
				inRacks[clusters[slices.IndexFunc(clusters, func(c Cluster) bool { return c.Name == name })].Labels["rack"]] = true
			}
			return len(names) <= n && sum >= need && len(inRacks) >= racks
		}
		var want []string
		for idx := range combinations(len(clusters), n) {
			var names []string
			for _, i := range idx {
				names = append(names, clusters[i].Name)
			}
			if isWanted(names) {
				want = names
				break
			}
		}
		budget := newTries(0) // none: picking without racks needs no search
		s := &spreadSearch{rooms: rooms, need: need, budget: budget,
			byCluster: []policyv1alpha1.SpreadConstraint{{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MaxGroups: int32(n)}}}
		if racks > 0 {
			s.byGroup, *budget = []policyv1alpha1.SpreadConstraint{{SpreadByLabel: "rack", MinGroups: int32(racks)}}, *newTries(searchBudget)
		}
		picked, err := s.count(clusters)
		var got []string
		for _, c := range picked {
			got = append(got, c.Name)
		}
		what := fmt.Sprintf("%d of %v (rooms %v) for %d in %d racks", n, clusters, rooms, need, racks)
		switch {
		case (err == nil) != (want != nil):
			t.Fatalf("%s: got %v, %v; want %v", what, got, err, want)
		case err == nil && !isWanted(got):
			t.Fatalf("%s: got %v, which lacks the room or the racks", what, got)
		case racks == 0 && !slices.Equal(got, want):
			t.Fatalf("%s: got %v, want the most preferred %v", what, got, want)
		}
		if racks > 0 && err == nil && budget.made > 0 {
			searched++
		}
	}
	if searched == 0 {
		t.Error("no choice was found by the search after greed missed")
	}
}

// TestScheduleSpreadSearchBudget: the choices the spread searches try are bounded per Schedule call, however many
// clusterAffinities terms fail and whether or not the search for room falls back to the preferred choice: one
// term may spend the whole budget, and each of many terms its floor; and a scale-up that the room-aware pick
// places tries none.
func TestScheduleSpreadSearchBudget(t *testing.T) {
	termsOf := func(n int) []policyv1alpha1.ClusterAffinityTerm {
		var terms []policyv1alpha1.ClusterAffinityTerm
		for i := range n {
			terms = append(terms, policyv1alpha1.ClusterAffinityTerm{AffinityName: fmt.Sprintf("t%d", i)})
		}
		return terms
	}
	var racks []Cluster
	for i := range 40 {
		racks = append(racks, cluster(fmt.Sprintf("c%02d", i), free(5), withLabels("rack", fmt.Sprint(i))))
	}
	// No 20 clusters cover 30 racks: every term's search tries all it may and fails.
	hopeless := func(terms int) *policyv1alpha1.Placement {
		return &policyv1alpha1.Placement{ReplicaScheduling: dynamicWeights, ClusterAffinities: termsOf(terms),
			SpreadConstraints: []policyv1alpha1.SpreadConstraint{{SpreadByLabel: "rack", MinGroups: 30},
				{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MaxGroups: 20}}}
	}
	for _, tc := range []struct {
		terms     int
		wantTries int
	}{
		{terms: 1, wantTries: searchBudget},
		{terms: 5, wantTries: searchBudget},                      // 2000 each
		{terms: 32, wantTries: 32 * termSearchFloor},             // the floor each, past the budget
		{terms: 12, wantTries: searchBudget + 2*termSearchFloor}, // 1000 each: the last two past the budget
	} {
		t.Run(fmt.Sprintf("%d terms, no 20 clusters cover 30 racks", tc.terms), func(t *testing.T) {
			budget := newTries(searchBudget)
			_, err := schedule(Input{Placement: hopeless(tc.terms), Replicas: 40, Clusters: racks, Now: now}, budget)
			var failed *UnschedulableError
			if !errors.As(err, &failed) || len(failed.Terms) != tc.terms {
				t.Fatalf("want every term to fail, got %v", err)
			}
			if budget.made != tc.wantTries || budget.left != 0 {
				t.Errorf("%d tries made (%d left), want %d", budget.made, budget.left, tc.wantTries)
			}
		})
	}
	t.Run("32 terms, a scale-up past 10 full clusters", func(t *testing.T) {
		clusters, previous := fullAndRoomy(10, 30)
		p := &policyv1alpha1.Placement{ReplicaScheduling: dynamicWeights, ClusterAffinities: termsOf(32),
			SpreadConstraints: []policyv1alpha1.SpreadConstraint{{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MinGroups: 1, MaxGroups: 10}}}
		budget := newTries(searchBudget)
		got, err := schedule(Input{Placement: p, Replicas: 40, Clusters: clusters, Previous: previous, PreviousAffinity: "t5", Now: now}, budget)
		if err != nil || got.AffinityName != "t5" {
			t.Fatalf("got %v on %q, %v", got.Clusters, got.AffinityName, err)
		}
		if budget.made != 0 {
			t.Errorf("%d tries made, want none", budget.made)
		}
	})
}

// BenchmarkScheduleSpreadSearchSpent times the costliest Schedule call the budget allows: 32 terms whose spread
// searches try every choice they may (the floor each) and fail.
func BenchmarkScheduleSpreadSearchSpent(b *testing.B) {
	var clusters []Cluster
	for i := range 40 {
		clusters = append(clusters, cluster(fmt.Sprintf("c%02d", i), free(5), withLabels("rack", fmt.Sprint(i))))
	}
	var terms []policyv1alpha1.ClusterAffinityTerm
	for i := range 32 {
		terms = append(terms, policyv1alpha1.ClusterAffinityTerm{AffinityName: fmt.Sprintf("t%d", i)})
	}
	p := &policyv1alpha1.Placement{ReplicaScheduling: dynamicWeights, ClusterAffinities: terms,
		SpreadConstraints: []policyv1alpha1.SpreadConstraint{{SpreadByLabel: "rack", MinGroups: 30},
			{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MaxGroups: 20}}}
	for b.Loop() {
		if _, err := Schedule(Input{Placement: p, Replicas: 40, Clusters: clusters, Now: now}); err == nil {
			b.Fatal("want every term to fail")
		}
	}
}
