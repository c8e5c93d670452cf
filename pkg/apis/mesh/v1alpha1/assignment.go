package v1alpha1

import (
	"fmt"

	"github.com/fedmesh/fedmesh/pkg/shard"
)

// The status holds hash ranges as text; these read and write them as pkg/shard's sets, the one form the manager,
// the CLI and the tests reason with.

// ParseHashRanges reads ranges as a set.
func ParseHashRanges(hrs []HashRange) (shard.Set, error) {
	var ranges []shard.Range
	for _, hr := range hrs {
		r, err := shard.ParseRange(hr.Start, hr.End)
		if err != nil {
			return shard.Set{}, err
		}
		ranges = append(ranges, r)
	}
	return shard.NewSet(ranges...), nil
}

// HashRangesOf writes s as the status holds it.
func HashRangesOf(s shard.Set) []HashRange {
	var out []HashRange
	for _, rg := range s.Ranges() {
		start, end := rg.Hex()
		out = append(out, HashRange{Start: start, End: end})
	}
	return out
}

// ParseAssignment reads an assignment as the status holds it.
func ParseAssignment(sas []ShardAssignment) (shard.Assignment, error) {
	a := shard.Assignment{}
	for _, sa := range sas {
		set, err := ParseHashRanges(sa.Ranges)
		if err != nil {
			return nil, fmt.Errorf("shard %d: %w", sa.Shard, err)
		}
		a[shard.ShardID(sa.Shard)] = set
	}
	return a, nil
}

// AssignmentStatus writes a as the status holds it (ranges only), by shard.
func AssignmentStatus(a shard.Assignment) []ShardAssignment {
	var out []ShardAssignment
	for _, id := range a.Shards() {
		out = append(out, ShardAssignment{Shard: int32(id), Ranges: HashRangesOf(a[id])})
	}
	return out
}
