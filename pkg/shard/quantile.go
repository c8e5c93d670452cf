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
