package scheduler

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"testing"
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
