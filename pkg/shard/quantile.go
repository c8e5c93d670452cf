package shard

import (
	"math"
	"slices"
)

// SplitByNamespaces cuts the hash space into contiguous ranges, one per shard in ID order, so that each shard
// owns the same number (to one) of the given namespaces.
//
// Why not Split: FNV-1a, the hash the API server filters by, mixes a name's last bytes only into the low and
// middle bits, so names that share a prefix ("team-00" ... "team-39") land next to each other, and an even cut of
// the space can give all of them to one shard. Cutting at the quantiles of the namespaces that exist balances
// them; a namespace created later falls in the range of its neighbours. With fewer namespaces than shards it is
// Split. shards must be >= 0; duplicates are ignored.
func SplitByNamespaces(namespaces []string, shards []ShardID) Assignment {
	ids := slices.Clone(shards)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	n := len(ids)
	hashes := make([]uint64, 0, len(namespaces))
	for _, ns := range namespaces {
		hashes = append(hashes, NamespaceHash(ns))
	}
	slices.Sort(hashes)
	hashes = slices.Compact(hashes)
	out := make(Assignment, n)
	if n == 0 {
		return out
	}
	if len(hashes) < n {
		for i, s := range Split(n) {
			out[ids[i]] = s
		}
		return out
	}
	// Shard i starts at the hash of namespace i*m/n (shard 0 at 0): distinct, sorted hashes give increasing starts.
	starts := make([]uint64, n)
	for i := 1; i < n; i++ {
		starts[i] = hashes[i*len(hashes)/n]
	}
	for i, id := range ids {
		last := uint64(math.MaxUint64)
		if i+1 < n {
			last = starts[i+1] - 1
		}
		out[id] = NewSet(Range{First: starts[i], Last: last})
	}
	return out
}

// RebalanceByNamespaces is Rebalance measured in namespaces instead of hashes: the given namespaces end up spread
// evenly (to one) over shards, and only a shard's excess namespaces move. Shards that are gone and unowned ranges
// go to a pool; each shard over its quota releases its highest namespaces (with the ranges above them) to the
// pool; each shard under its quota takes the next run of pool namespaces, lowest first; what is left of the pool,
// holding no namespace, goes to the lowest shard. Without namespaces it is Rebalance. The result is valid.
func RebalanceByNamespaces(current Assignment, shards []ShardID, namespaces []string) Assignment {
	ids := slices.Clone(shards)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	hashes := make([]uint64, 0, len(namespaces))
	for _, ns := range namespaces {
		hashes = append(hashes, NamespaceHash(ns))
	}
	slices.Sort(hashes)
	hashes = slices.Compact(hashes)
	if len(ids) == 0 || len(hashes) == 0 {
		return Rebalance(current, shards)
	}
	// What each remaining shard keeps to start with; a hash owned twice stays with the lower ID.
	out := make(Assignment, len(ids))
	var claimed Set
	for _, id := range ids {
		out[id] = current[id].Difference(claimed)
		claimed = claimed.Union(out[id])
	}
	pool := claimed.Complement()
	in := func(s Set) []uint64 { // the namespace hashes in s, ascending
		var hs []uint64
		for _, h := range hashes {
			if s.Contains(h) {
				hs = append(hs, h)
			}
		}
		return hs
	}
	quota := make(map[ShardID]int, len(ids))
	for i, id := range ids {
		quota[id] = len(hashes) / len(ids)
		if i < len(hashes)%len(ids) {
			quota[id]++
		}
	}
	for _, id := range ids {
		if hs := in(out[id]); len(hs) > quota[id] {
			above := NewSet(Range{First: hs[quota[id]], Last: math.MaxUint64}).Intersect(out[id])
			out[id] = out[id].Difference(above)
			pool = pool.Union(above)
		}
	}
	for _, id := range ids {
		deficit := quota[id] - len(in(out[id]))
		if deficit <= 0 {
			continue
		}
		hs := in(pool)
		take := pool
		if deficit < len(hs) {
			take = pool.Intersect(NewSet(Range{First: 0, Last: hs[deficit] - 1}))
		}
		out[id] = out[id].Union(take)
		pool = pool.Difference(take)
	}
	if !pool.Empty() {
		out[ids[0]] = out[ids[0]].Union(pool)
	}
	return out
}
