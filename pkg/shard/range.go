package shard

import (
	"fmt"
	"math"
	"strconv"
)

// spaceSize is 2^64, the number of points in the hash space, as a float for fractions.
const spaceSize = float64(1 << 64)

// hashSpaceEnd is the exclusive end of the hash space in the text form: 2^64, one past the last hash.
const hashSpaceEnd = "0x10000000000000000"

// Range is the run of hashes First..Last, both inclusive.
//
// Inclusive bounds are what let a Range name both the whole space (0..MaxUint64) and a single namespace
// (First == Last) in plain uint64s. The text form used by ShardingConfig status and by shardSelector is half-open,
// [start, end), and its end can be 2^64, which no uint64 holds; Hex and ParseRange convert at that boundary.
// A Range with First > Last is empty and meaningless; nothing in this package makes one.
type Range struct {
	First, Last uint64
}

// FullRange is the whole hash space.
func FullRange() Range { return Range{First: 0, Last: math.MaxUint64} }

// PointRange is the one hash h, e.g. a single namespace.
func PointRange(h uint64) Range { return Range{First: h, Last: h} }

// Valid reports whether r holds at least one hash (First <= Last).
func (r Range) Valid() bool { return r.First <= r.Last }

// Contains reports whether h is in r.
func (r Range) Contains(h uint64) bool { return r.First <= h && h <= r.Last }

// Fraction is the share of the hash space that r covers, in [0, 1].
func (r Range) Fraction() float64 {
	if !r.Valid() {
		return 0
	}
	// Last-First+1 would overflow for the full range; add the 1 in floating point instead.
	return (float64(r.Last-r.First) + 1) / spaceSize
}

// Hex is r in the text form of ShardingConfig status and shardSelector: start inclusive, end exclusive, both
// "0x" and 16 lowercase hex digits, except an end of 2^64, which is "0x10000000000000000".
func (r Range) Hex() (start, end string) {
	start = formatHash(r.First)
	if r.Last == math.MaxUint64 {
		return start, hashSpaceEnd
	}
	return start, formatHash(r.Last + 1)
}

// String is r as a half-open interval, "[0x0000000000000000,0x8000000000000000)".
func (r Range) String() string {
	start, end := r.Hex()
	return "[" + start + "," + end + ")"
}

// ParseRange reads the text form that Hex writes. It is as strict as the API server's shardSelector parser
// (lowercase, exactly 16 digits), so one range has one spelling, and it refuses an empty range (start >= end).
func ParseRange(start, end string) (Range, error) {
	first, err := parseHash(start)
	if err != nil {
		return Range{}, fmt.Errorf("range start: %w", err)
	}
	if end == hashSpaceEnd {
		return Range{First: first, Last: math.MaxUint64}, nil
	}
	stop, err := parseHash(end)
	if err != nil {
		return Range{}, fmt.Errorf("range end: %w", err)
	}
	if stop <= first {
		return Range{}, fmt.Errorf("range start %s must be less than end %s", start, end)
	}
	return Range{First: first, Last: stop - 1}, nil
}

func formatHash(h uint64) string { return fmt.Sprintf("0x%016x", h) }

// parseHash reads "0x" and exactly 16 lowercase hex digits.
func parseHash(s string) (uint64, error) {
	if len(s) != 18 || s[:2] != "0x" {
		return 0, fmt.Errorf("%q is not 0x and 16 hex digits", s)
	}
	for _, c := range s[2:] {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return 0, fmt.Errorf("%q has %q, want lowercase hex digits", s, c)
		}
	}
	return strconv.ParseUint(s[2:], 16, 64)
}
