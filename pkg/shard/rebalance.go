package shard

import (
	"math"
	"math/bits"
	"slices"
)

// Split cuts the hash space into n contiguous sets of equal size (to one hash), lowest first: shard i of a fresh
// n-shard deployment owns Split(n)[i]. Rebalance of a Split over IDs 0..n-1 moves nothing. n <= 0 gives nil.
func Split(n int) []Set {
	if n <= 0 {
		return nil
	}
	if n == 1 {
		return []Set{Full()}
	}
	out := make([]Set, n)
	var first uint64
	for i, q := range quotas(n) {
		out[i] = NewSet(Range{First: first, Last: first + q - 1})
		first += q // wraps to 0 after the last set, which is never used
	}
	return out
}

// Rebalance spreads the hash space evenly over shards while moving as little as it can: each shard keeps what it
// owns up to its even share, and only the excess, the ranges of shards that are gone and any unowned gap are handed
// out, first to shards whose ranges they extend, then lowest hash first. Going from m to n evenly loaded shards
// therefore moves a share |m-n|/max(m,n) of the space, the least possible, instead of all of it.
//
// current need not be valid: unowned hashes are handed out and a hash owned twice stays with the lower ID.
// Shards in current but not in shards lose everything, carved canary namespaces included (Carve them again).
// shards must be >= 0; duplicates are ignored. The result is valid unless shards is empty, when it is empty.
func Rebalance(current Assignment, shards []ShardID) Assignment {
	ids := slices.Clone(shards)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	switch len(ids) {
	case 0:
		return Assignment{}
	case 1:
		return Assignment{ids[0]: Full()}
	}

	// Keep what each shard has, up to its share.
	share := make(map[ShardID]uint64, len(ids))
	out := make(Assignment, len(ids))
	var claimed Set
	for i, q := range quotas(len(ids)) {
		id := ids[i]
		share[id] = q
		out[id] = lowest(current[id].Difference(claimed), q)
		claimed = claimed.Union(out[id])
	}
	pool := claimed.Complement()

	missing := func(id ShardID) uint64 {
		n, _ := out[id].count() // a share is < 2^64 when there are two or more shards
		return share[id] - n
	}
	give := func(id ShardID, s Set) {
		out[id] = out[id].Union(s)
		pool = pool.Difference(s)
	}
	// Extend a shard's own ranges first, so that it stays in few pieces.
	for _, id := range ids {
		for _, r := range out[id].Ranges() {
			if r.Last != math.MaxUint64 && pool.Contains(r.Last+1) {
				give(id, runUp(pool, r.Last+1, missing(id)))
			}
			if r.First != 0 && pool.Contains(r.First-1) {
				give(id, runDown(pool, r.First-1, missing(id)))
			}
		}
	}
	// Then hand out what is left, lowest hash first.
	for _, id := range ids {
		give(id, lowest(pool, missing(id)))
	}
	return out
}

// quotas is each shard's share when the space is cut in n >= 2: 2^64/n hashes, and one more for the first
// 2^64 mod n shards, so that the shares add up to exactly 2^64.
func quotas(n int) []uint64 {
	q, rem := bits.Div64(1, 0, uint64(n)) // 2^64 / n; n >= 2 keeps the quotient within 64 bits
	out := make([]uint64, n)
	for i := range out {
		out[i] = q
		if uint64(i) < rem {
			out[i]++
		}
	}
	return out
}

// lowest is the n lowest hashes of s, or all of s if it has no more than n.
func lowest(s Set, n uint64) Set {
	var out []Range
	for _, r := range s.ranges {
		if n == 0 {
			break
		}
		if span := r.Last - r.First; n <= span { // span+1 hashes; span+1 would overflow for the full range
			out = append(out, Range{First: r.First, Last: r.First + n - 1})
			break
		}
		out = append(out, r)
		n -= r.Last - r.First + 1
	}
	return Set{ranges: out}
}

// runUp is at most n hashes of pool from h upward, stopping at the end of the range of pool that holds h.
func runUp(pool Set, h, n uint64) Set {
	r, ok := rangeOf(pool, h)
	if !ok || n == 0 {
		return Set{}
	}
	if r.Last-h >= n {
		return NewSet(Range{First: h, Last: h + n - 1})
	}
	return NewSet(Range{First: h, Last: r.Last})
}

// runDown is at most n hashes of pool from h downward, stopping at the start of the range of pool that holds h.
func runDown(pool Set, h, n uint64) Set {
	r, ok := rangeOf(pool, h)
	if !ok || n == 0 {
		return Set{}
	}
	if h-r.First >= n {
		return NewSet(Range{First: h - n + 1, Last: h})
	}
	return NewSet(Range{First: r.First, Last: h})
}

// rangeOf is the range of s that holds h.
func rangeOf(s Set, h uint64) (Range, bool) {
	for _, r := range s.ranges {
		if r.Contains(h) {
			return r, true
		}
	}
	return Range{}, false
}
