package scheduler

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"testing"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
)

// TestApportionQuick checks apportion against what any fair division must do, for random weights: the shares sum
// to the total, each is its exact share rounded down or up, and the result does not depend on the input order.
func TestApportionQuick(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		n := 1 + rng.IntN(6)
		shares := make([]share, n)
		var sum int64
		for i := range shares {
			shares[i] = share{name: fmt.Sprintf("c%d", i), weight: 1 + rng.Int64N(10), previous: rng.Int32N(4)}
			sum += shares[i].weight
		}
		total := rng.Int32N(100)
		got := apportion(total, shares)
		var n32 int32
		for _, s := range shares {
			r := got[s.name]
			n32 += r
			low := int64(total) * s.weight / sum
			if int64(r) != low && int64(r) != low+1 {
				t.Fatalf("apportion(%d, %v): %s got %d, exact share %d/%d", total, shares, s.name, r, int64(total)*s.weight, sum)
			}
		}
		if n32 != total {
			t.Fatalf("apportion(%d, %v) = %v sums to %d", total, shares, got, n32)
		}
		reversed := make([]share, n)
		for i, s := range shares {
			reversed[n-1-i] = s
		}
		again := apportion(total, reversed)
		for name, r := range got {
			if again[name] != r {
				t.Fatalf("apportion depends on order: %v vs %v", got, again)
			}
		}
	}
}

// TestApportionHugeWeights: weights whose products with the total, and whose sum, are past int64 still divide
// in proportion.
func TestApportionHugeWeights(t *testing.T) {
	for _, tc := range []struct {
		total  int32
		shares []share
		want   map[string]int32
	}{
		{total: 1 << 24, shares: []share{{name: "a", weight: 1 << 40}, {name: "b", weight: 1}}, want: map[string]int32{"a": 1 << 24, "b": 0}},
		{total: 3, shares: []share{{name: "a", weight: math.MaxInt64}, {name: "b", weight: math.MaxInt64}, {name: "c", weight: math.MaxInt64}},
			want: map[string]int32{"a": 1, "b": 1, "c": 1}},
		{total: math.MaxInt32, shares: []share{{name: "a", weight: math.MaxInt64}, {name: "b", weight: math.MaxInt64 / 2}},
			want: map[string]int32{"a": 1431655765, "b": 715827882}},
	} {
		got := apportion(tc.total, tc.shares)
		if !maps.Equal(got, tc.want) {
			t.Errorf("apportion(%d, %v) = %v, want %v", tc.total, tc.shares, got, tc.want)
		}
	}
}

// TestScheduleDynamicUnknownRoom: with dynamic weights, a cluster that reported no room (no resource summary yet:
// a new member, a Pull cluster) weighs as room for every replica, as Karmada counts it, and the clusters of known
// room weigh by it: none of them gets more replicas than it has room for.
func TestScheduleDynamicUnknownRoom(t *testing.T) {
	byRoom := &policyv1alpha1.Placement{ReplicaScheduling: dynamicWeights}
	runSchedule(t, []scheduleCase{
		{
			name: "room for 1 beside unknown room: 1 and 9",
			in:   Input{Replicas: 10, Placement: byRoom, Clusters: []Cluster{cluster("small", free(1)), cluster("unknown")}},
			want: targets("small", 1, "unknown", 9),
		},
		{
			name: "two of known room beside unknown room: each within its room",
			in: Input{Replicas: 6, Placement: byRoom,
				Clusters: []Cluster{cluster("a", free(2)), cluster("b", free(3)), cluster("unknown")}},
			want: targets("a", 1, "b", 2, "unknown", 3),
		},
		{
			name: "scale-up: the full cluster keeps its replica, the new ones go to the unknown one",
			in: Input{Replicas: 10, Placement: byRoom, Previous: targets("small", 1, "unknown", 1),
				Clusters: []Cluster{cluster("small", free(0)), cluster("unknown")}},
			want: targets("small", 1, "unknown", 9),
		},
		{
			name: "every room unknown: equal shares",
			in:   Input{Replicas: 5, Placement: byRoom, Clusters: []Cluster{cluster("a"), cluster("b")}},
			want: targets("a", 3, "b", 2),
		},
	})
}

// TestDynamicStaysWithinKnownRoom checks dynamic on random clusters, some of unknown room: the replicas sum to the
// total, and no cluster of known room gets more new replicas than it has room for.
func TestDynamicStaysWithinKnownRoom(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		var clusters []Cluster
		previous := map[string]int32{}
		for i := range 1 + rng.IntN(5) {
			c := Cluster{Name: fmt.Sprintf("c%d", i)}
			if rng.IntN(3) > 0 {
				c.Available, c.AvailableKnown = rng.Int32N(6), true
			}
			if rng.IntN(2) == 0 {
				previous[c.Name] = rng.Int32N(4)
			}
			clusters = append(clusters, c)
		}
		clusters[rng.IntN(len(clusters))].AvailableKnown = false
		replicas := rng.Int32N(40)
		got, err := dynamic(clusters, nil, replicas, previous)
		if err != nil {
			t.Fatalf("dynamic(%v, %d, %v) with a room unknown: %v", clusters, replicas, previous, err)
		}
		var sum int32
		for _, c := range clusters {
			sum += got[c.Name]
			if c.AvailableKnown && got[c.Name] > previous[c.Name]+c.Available {
				t.Fatalf("dynamic(%v, %d, %v) = %v: %s has room for %d more, got %d past its %d",
					clusters, replicas, previous, got, c.Name, c.Available, got[c.Name]-previous[c.Name], previous[c.Name])
			}
		}
		if sum != replicas {
			t.Fatalf("dynamic(%v, %d, %v) = %v sums to %d", clusters, replicas, previous, got, sum)
		}
	}
}
