package shard

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Set is a set of hashes, kept as ranges that are sorted, disjoint and never adjacent (touching ranges are merged),
// so that two equal sets have the same ranges. The zero Set is empty. A Set is a value: no operation changes its
// receiver or arguments, and its ranges are never shared with a caller.
type Set struct {
	ranges []Range
}

// NewSet is the set of all hashes in rs. The ranges may overlap, touch or come in any order; ranges with
// First > Last are empty and add nothing.
func NewSet(rs ...Range) Set { return Set{ranges: normalize(rs)} }

// Full is the whole hash space.
func Full() Set { return Set{ranges: []Range{FullRange()}} }

// Point is the set of the one hash h.
func Point(h uint64) Set { return Set{ranges: []Range{PointRange(h)}} }

// Empty reports whether s holds no hash.
func (s Set) Empty() bool { return len(s.ranges) == 0 }

// IsFull reports whether s is the whole hash space.
func (s Set) IsFull() bool { return len(s.ranges) == 1 && s.ranges[0] == FullRange() }

// Ranges is a copy of s's normalized ranges, lowest first.
func (s Set) Ranges() []Range { return slices.Clone(s.ranges) }

// RangeCount is how many ranges s is made of: 1 for a contiguous set, more as it fragments.
func (s Set) RangeCount() int { return len(s.ranges) }

// Equal reports whether s and o hold the same hashes.
func (s Set) Equal(o Set) bool { return slices.Equal(s.ranges, o.ranges) }

// Contains reports whether h is in s.
func (s Set) Contains(h uint64) bool {
	// The first range that does not end before h is the only one that can hold it.
	i, _ := slices.BinarySearchFunc(s.ranges, h, func(r Range, h uint64) int {
		if r.Last < h {
			return -1
		}
		return 1
	})
	return i < len(s.ranges) && s.ranges[i].First <= h
}

// ContainsNamespace reports whether the namespace ns hashes into s.
func (s Set) ContainsNamespace(ns string) bool { return s.Contains(NamespaceHash(ns)) }

// Fraction is the share of the hash space that s covers, in [0, 1]; for balancing reports, not for exact sums.
func (s Set) Fraction() float64 {
	var f float64
	for _, r := range s.ranges {
		f += r.Fraction()
	}
	return f
}

// count is the exact number of hashes in s, or all == true for the full space, whose 2^64 does not fit a uint64.
func (s Set) count() (n uint64, all bool) {
	if s.IsFull() {
		return 0, true
	}
	for _, r := range s.ranges {
		n += r.Last - r.First + 1 // cannot overflow: s is not full, so it holds fewer than 2^64 hashes
	}
	return n, false
}

// String is s as "{[start,end) [start,end)}", each range in the half-open text form; the empty set is "{}".
// ParseSet reads it back.
func (s Set) String() string {
	parts := make([]string, len(s.ranges))
	for i, r := range s.ranges {
		parts[i] = r.String()
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// ParseSet reads the form String writes. Ranges may come in any order and may overlap; the result is normalized.
func ParseSet(text string) (Set, error) {
	body, hasOpen := strings.CutPrefix(strings.TrimSpace(text), "{")
	body, hasClose := strings.CutSuffix(body, "}")
	if !hasOpen || !hasClose {
		return Set{}, fmt.Errorf("set %q: want {[start,end) ...}", text)
	}
	var rs []Range
	for _, field := range strings.Fields(body) {
		inner, hasOpen := strings.CutPrefix(field, "[")
		inner, hasClose := strings.CutSuffix(inner, ")")
		if !hasOpen || !hasClose {
			return Set{}, fmt.Errorf("set %q: range %q: want [start,end)", text, field)
		}
		start, end, ok := strings.Cut(inner, ",")
		if !ok {
			return Set{}, fmt.Errorf("set %q: range %q: want [start,end)", text, field)
		}
		r, err := ParseRange(start, end)
		if err != nil {
			return Set{}, fmt.Errorf("set %q: %w", text, err)
		}
		rs = append(rs, r)
	}
	return NewSet(rs...), nil
}

// MarshalText writes s as String does, so that a Set can sit in JSON or YAML config as one string.
func (s Set) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads the form String writes.
func (s *Set) UnmarshalText(text []byte) error {
	parsed, err := ParseSet(string(text))
	if err != nil {
		return err
	}
	*s = parsed
	return nil
}

// normalize sorts rs, drops empty ranges and merges ranges that overlap or touch. It never changes rs.
func normalize(rs []Range) []Range {
	out := make([]Range, 0, len(rs))
	for _, r := range rs {
		if r.Valid() {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b Range) int {
		switch {
		case a.First < b.First:
			return -1
		case a.First > b.First:
			return 1
		}
		return 0
	})
	merged := out[:0]
	for _, r := range out {
		if n := len(merged); n > 0 && touches(merged[n-1], r) {
			merged[n-1].Last = max(merged[n-1].Last, r.Last)
			continue
		}
		merged = append(merged, r)
	}
	if len(merged) == 0 {
		return nil // so that every empty set is the zero Set
	}
	return merged
}

// touches reports whether b, which starts no earlier than a, overlaps a or starts right after it.
func touches(a, b Range) bool {
	return a.Last == math.MaxUint64 || b.First <= a.Last+1
}
