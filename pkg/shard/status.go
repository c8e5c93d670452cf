package shard

import (
	"fmt"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
)

// A ShardingConfig's status holds hash ranges as text; these read and write them as sets, the one form the
// manager, the CLI and the tests reason with.

// ParseStatusRanges reads ranges as a set.
func ParseStatusRanges(hrs []meshv1alpha1.HashRange) (Set, error) {
	var ranges []Range
	for _, hr := range hrs {
		r, err := ParseRange(hr.Start, hr.End)
		if err != nil {
			return Set{}, err
		}
		ranges = append(ranges, r)
	}
	return NewSet(ranges...), nil
}

// StatusRanges writes s as the status holds it.
func StatusRanges(s Set) []meshv1alpha1.HashRange {
	var out []meshv1alpha1.HashRange
	for _, rg := range s.Ranges() {
		start, end := rg.Hex()
		out = append(out, meshv1alpha1.HashRange{Start: start, End: end})
	}
	return out
}

// ParseStatusAssignment reads an assignment as the status holds it.
func ParseStatusAssignment(sas []meshv1alpha1.ShardAssignment) (Assignment, error) {
	a := Assignment{}
	for _, sa := range sas {
		set, err := ParseStatusRanges(sa.Ranges)
		if err != nil {
			return nil, fmt.Errorf("shard %d: %w", sa.Shard, err)
		}
		a[ShardID(sa.Shard)] = set
	}
	return a, nil
}

// StatusAssignment writes a as the status holds it (ranges only), by shard.
func StatusAssignment(a Assignment) []meshv1alpha1.ShardAssignment {
	var out []meshv1alpha1.ShardAssignment
	for _, id := range a.Shards() {
		out = append(out, meshv1alpha1.ShardAssignment{Shard: int32(id), Ranges: StatusRanges(a[id])})
	}
	return out
}
