package shard

import (
	"slices"
	"testing"
)

func TestDiff(t *testing.T) {
	const half, quarter = 1 << 63, 1 << 62
	tests := []struct {
		name     string
		old, new Assignment
		want     []Move
	}{
		{"same", halves(), halves(), nil},
		{"both empty", Assignment{}, nil, nil},
		{"first assignment grants only", Assignment{}, halves(), []Move{
			{Ranges: NewSet(rg(0, half-1)), From: NoShard, To: 0},
			{Ranges: NewSet(rg(half, top)), From: NoShard, To: 1},
		}},
		{"dropping everything revokes only", halves(), Assignment{}, []Move{
			{Ranges: NewSet(rg(0, half-1)), From: 0, To: NoShard},
			{Ranges: NewSet(rg(half, top)), From: 1, To: NoShard},
		}},
		{"swap", halves(), Assignment{1: NewSet(rg(0, half-1)), 0: NewSet(rg(half, top))}, []Move{
			{Ranges: NewSet(rg(0, half-1)), From: 0, To: 1},
			{Ranges: NewSet(rg(half, top)), From: 1, To: 0},
		}},
		{"a new shard takes from both", halves(), Assignment{
			0: NewSet(rg(0, quarter-1)), 1: NewSet(rg(half+quarter, top)), 2: NewSet(rg(quarter, half+quarter-1)),
		}, []Move{
			{Ranges: NewSet(rg(quarter, half-1)), From: 0, To: 2},
			{Ranges: NewSet(rg(half, half+quarter-1)), From: 1, To: 2},
		}},
		{"carve and unowned gap", Assignment{0: NewSet(rg(0, 99))}, Assignment{0: NewSet(rg(0, 9), rg(11, 99)), 7: Point(10), 1: NewSet(rg(100, top))}, []Move{
			{Ranges: NewSet(rg(100, top)), From: NoShard, To: 1},
			{Ranges: Point(10), From: 0, To: 7},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Diff(tt.old, tt.new)
			if !slices.EqualFunc(got, tt.want, func(a, b Move) bool {
				return a.From == b.From && a.To == b.To && a.Ranges.Equal(b.Ranges)
			}) {
				t.Errorf("Diff =\n  %v\nwant\n  %v", got, tt.want)
			}
			if applied := apply(tt.old, got); !applied.Equal(tt.new) {
				t.Errorf("applying the moves gives %v, want %v", applied, tt.new)
			}
		})
	}
}

// Every handover Rebalance asks for, applied move by move, ends at the new assignment.
func TestDiffReplaysRebalance(t *testing.T) {
	for m := 1; m <= 6; m++ {
		for n := 1; n <= 6; n++ {
			old := splitAssignment(m)
			next := Rebalance(old, ids(n))
			if got := apply(old, Diff(old, next)); !got.Equal(next) {
				t.Errorf("%d -> %d shards: replaying Diff gives %v, want %v", m, n, got, next)
			}
		}
	}
}

// apply plays moves the way the manager does: revoke every move's ranges first, then grant them.
func apply(a Assignment, moves []Move) Assignment {
	out := a.Clone()
	for _, m := range moves {
		if m.From != NoShard {
			out[m.From] = out[m.From].Difference(m.Ranges)
		}
	}
	for _, m := range moves {
		if m.To != NoShard {
			out[m.To] = out[m.To].Union(m.Ranges)
		}
	}
	return out
}

func TestMoveString(t *testing.T) {
	tests := []struct {
		m    Move
		want string
	}{
		{Move{Ranges: Point(0), From: 1, To: 3}, "shard 1 -> shard 3: {[0x0000000000000000,0x0000000000000001)}"},
		{Move{Ranges: Full(), From: NoShard, To: 0}, "nobody -> shard 0: {[0x0000000000000000,0x10000000000000000)}"},
	}
	for _, tt := range tests {
		if got := tt.m.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}
