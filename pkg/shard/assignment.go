package shard

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ShardID is a shard's stable ordinal (a StatefulSet ordinal or a pod label), never a host name, so that a rolling
// update moves nothing. Valid IDs are >= 0.
type ShardID int32

// NoShard stands for "nobody" in a Move: a range that nobody owned before, or that nobody owns after.
const NoShard ShardID = -1

// Assignment says which hashes each shard owns. A valid assignment covers the whole hash space exactly once (see
// Validate). A shard that owns nothing may be missing or map to the empty Set; the two mean the same.
// Versions and epochs belong to whoever publishes the assignment, not to this value.
type Assignment map[ShardID]Set

// Shards is the IDs of the shards that own something, in ascending order.
func (a Assignment) Shards() []ShardID {
	ids := make([]ShardID, 0, len(a))
	for id, s := range a {
		if !s.Empty() {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// Owner is the shard that owns hash h, or false if none does. If an invalid assignment gives h to several shards,
// the lowest ID wins, so the answer is at least deterministic.
func (a Assignment) Owner(h uint64) (ShardID, bool) {
	for _, id := range a.Shards() {
		if a[id].Contains(h) {
			return id, true
		}
	}
	return NoShard, false
}

// NamespaceOwner is the shard that owns namespace ns, or false if none does.
func (a Assignment) NamespaceOwner(ns string) (ShardID, bool) { return a.Owner(NamespaceHash(ns)) }

// Equal reports whether a and o give every hash to the same shard.
func (a Assignment) Equal(o Assignment) bool {
	ids := a.Shards()
	if !slices.Equal(ids, o.Shards()) {
		return false
	}
	for _, id := range ids {
		if !a[id].Equal(o[id]) {
			return false
		}
	}
	return true
}

// Clone is a copy of a that can be changed without changing a.
func (a Assignment) Clone() Assignment { return maps.Clone(a) } // Sets are values; copying the map is enough

// Owned is the union of every shard's hashes.
func (a Assignment) Owned() Set {
	var all Set
	for _, s := range a {
		all = all.Union(s)
	}
	return all
}

// Validate reports how a fails to give every hash to exactly one shard: a negative shard ID, hashes owned by two
// shards, or hashes owned by none. Each problem names the shards and ranges involved; nil means a is valid.
func (a Assignment) Validate() error {
	var errs []error
	ids := a.Shards()
	for _, id := range ids {
		if id < 0 {
			errs = append(errs, fmt.Errorf("shard ID %d is negative", id))
		}
	}
	for i, x := range ids {
		for _, y := range ids[i+1:] {
			if both := a[x].Intersect(a[y]); !both.Empty() {
				errs = append(errs, fmt.Errorf("shards %d and %d both own %s", x, y, rangesText(both)))
			}
		}
	}
	if gap := a.Owned().Complement(); !gap.Empty() {
		errs = append(errs, fmt.Errorf("no shard owns %s", rangesText(gap)))
	}
	return errors.Join(errs...)
}

// rangesText lists at most a few ranges of s, so that an error about a fragmented set stays readable.
func rangesText(s Set) string {
	const most = 4
	parts := make([]string, 0, most+1)
	for i, r := range s.ranges {
		if i == most {
			parts = append(parts, fmt.Sprintf("and %d more ranges", len(s.ranges)-most))
			break
		}
		parts = append(parts, r.String())
	}
	return strings.Join(parts, " ")
}

// Reassign gives the hashes in s to shard to, taking them from whoever owned them. It returns a new Assignment and
// leaves a unchanged.
func Reassign(a Assignment, s Set, to ShardID) Assignment {
	out := make(Assignment, len(a)+1)
	for id, owned := range a {
		if rest := owned.Difference(s); !rest.Empty() {
			out[id] = rest
		}
	}
	out[to] = out[to].Union(s)
	return out
}

// Carve gives namespace ns to shard to as a one-point range, taking it from its owner: how a canary shard gets a
// named namespace. Carving it back to its former owner, or a Rebalance, undoes it.
func Carve(a Assignment, ns string, to ShardID) Assignment {
	return Reassign(a, Point(NamespaceHash(ns)), to)
}
