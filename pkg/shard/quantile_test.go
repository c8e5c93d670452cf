package shard

import (
	"fmt"
	"testing"
)

func TestSplitByNamespaces(t *testing.T) {
	names := func(prefix string, n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("%s-%02d", prefix, i))
		}
		return out
	}
	tests := []struct {
		name       string
		namespaces []string
		shards     []ShardID
	}{
		{"shared prefix, 2 shards", names("team", 40), []ShardID{0, 1}},
		{"shared prefix, 3 shards", names("team", 40), []ShardID{0, 1, 2}},
		{"two prefixes, 4 shards", append(names("shop", 10), names("payments", 13)...), []ShardID{0, 1, 2, 3}},
		{"gaps in ordinals", names("ns", 7), []ShardID{5, 2, 9}},
		{"fewer namespaces than shards", names("ns", 2), []ShardID{0, 1, 2}},
		{"duplicates", append(names("ns", 4), names("ns", 4)...), []ShardID{0, 1, 1}},
		{"one shard", names("ns", 4), []ShardID{3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := SplitByNamespaces(tt.namespaces, tt.shards)
			if err := a.Validate(); err != nil {
				t.Fatal(err)
			}
			count := map[ShardID]int{}
			unique := map[string]bool{}
			for _, ns := range tt.namespaces {
				unique[ns] = true
			}
			for ns := range unique {
				owner, ok := a.NamespaceOwner(ns)
				if !ok {
					t.Fatalf("%s has no owner", ns)
				}
				count[owner]++
			}
			ids := a.Shards()
			if len(unique) < len(ids) {
				return // Split: nothing to balance
			}
			lo, hi := len(unique), 0
			for _, id := range ids {
				lo, hi = min(lo, count[id]), max(hi, count[id])
			}
			if hi-lo > 1 {
				t.Errorf("unbalanced: %v", count)
			}
		})
	}
	// The reason it exists: an even Split gives every team-NN namespace to one shard.
	even := Rebalance(nil, []ShardID{0, 1})
	owners := map[ShardID]bool{}
	for _, ns := range names("team", 40) {
		o, _ := even.NamespaceOwner(ns)
		owners[o] = true
	}
	if len(owners) != 1 {
		t.Errorf("an even split spread team-NN over %d shards; the reason given for SplitByNamespaces no longer holds", len(owners))
	}
}

func TestRebalanceByNamespacesMovesOnlyTheExcess(t *testing.T) {
	var names []string
	for i := range 60 {
		names = append(names, fmt.Sprintf("team-%02d", i))
	}
	shardIDs := func(n int) []ShardID {
		out := make([]ShardID, n)
		for i := range out {
			out[i] = ShardID(i)
		}
		return out
	}
	counts := func(a Assignment) map[ShardID]int {
		c := map[ShardID]int{}
		for _, ns := range names {
			o, _ := a.NamespaceOwner(ns)
			c[o]++
		}
		return c
	}
	for _, tc := range []struct{ from, to int }{{2, 3}, {3, 2}, {1, 4}, {4, 1}, {3, 3}, {2, 5}, {5, 2}} {
		t.Run(fmt.Sprintf("%d-to-%d", tc.from, tc.to), func(t *testing.T) {
			before := SplitByNamespaces(names, shardIDs(tc.from))
			after := RebalanceByNamespaces(before, shardIDs(tc.to), names)
			if err := after.Validate(); err != nil {
				t.Fatal(err)
			}
			c := counts(after)
			lo, hi := len(names), 0
			for _, id := range shardIDs(tc.to) {
				lo, hi = min(lo, c[id]), max(hi, c[id])
			}
			if hi-lo > 1 {
				t.Errorf("unbalanced after: %v", c)
			}
			moved := 0
			for _, ns := range names {
				a, _ := before.NamespaceOwner(ns)
				b, _ := after.NamespaceOwner(ns)
				if a != b {
					moved++
				}
			}
			// The least any rebalance can move: what the shards over their new quota hold beyond it.
			least := 0
			cb := counts(before)
			for id, n := range cb {
				quota := len(names) / tc.to
				if int(id) < len(names)%tc.to {
					quota++
				}
				if int(id) >= tc.to {
					quota = 0
				}
				least += max(0, n-quota)
			}
			if moved != least {
				t.Errorf("moved %d namespaces, the least possible is %d", moved, least)
			}
		})
	}
}
