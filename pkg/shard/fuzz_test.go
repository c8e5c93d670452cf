package shard

import (
	"encoding/binary"
	"math"
	"testing"
)

// decodeSet turns fuzz bytes into a Set. Each range end is a tag byte and a value: near 0, near 2^64, near the
// middle, or any 64-bit number, so that the fuzzer reaches the edges where inclusive bounds overflow.
func decodeSet(data []byte) Set {
	var ends []uint64
	for len(data) >= 2 {
		tag, b := data[0], uint64(data[1])
		data = data[2:]
		switch tag % 4 {
		case 0:
			ends = append(ends, b)
		case 1:
			ends = append(ends, top-b)
		case 2:
			ends = append(ends, 1<<63-128+b)
		case 3:
			if len(data) < 7 {
				return setOfEnds(ends)
			}
			ends = append(ends, binary.BigEndian.Uint64(append([]byte{byte(b)}, data[:7]...)))
			data = data[7:]
		}
	}
	return setOfEnds(ends)
}

func setOfEnds(ends []uint64) Set {
	var rs []Range
	for i := 0; i+1 < len(ends); i += 2 {
		rs = append(rs, rg(min(ends[i], ends[i+1]), max(ends[i], ends[i+1])))
	}
	return NewSet(rs...)
}

// boundaries is every hash at which membership of s can change, and its neighbours.
func boundaries(s Set) []uint64 {
	var out []uint64
	for _, r := range s.ranges {
		out = append(out, r.First, r.Last, r.First-1, r.Last+1) // wrapping at the ends is fine: still a hash
	}
	return out
}

func FuzzSetAlgebra(f *testing.F) {
	f.Add([]byte{}, []byte{})
	f.Add([]byte{0, 1, 0, 10}, []byte{0, 5, 0, 20})
	f.Add([]byte{0, 0, 1, 0}, []byte{0, 3, 0, 3})                               // full minus a point
	f.Add([]byte{1, 0, 1, 0}, []byte{0, 0, 0, 0})                               // the two ends of the space
	f.Add([]byte{0, 0, 0, 9, 0, 10, 0, 20}, []byte{0, 9, 0, 10})                // adjacent ranges
	f.Add([]byte{2, 0, 2, 255, 1, 5, 1, 0}, []byte{0, 0, 2, 128, 2, 129, 1, 0}) // around the middle
	f.Add([]byte{3, 0x12, 1, 2, 3, 4, 5, 6, 7, 3, 0x80, 0, 0, 0, 0, 0, 0, 0}, []byte{3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0})
	f.Fuzz(func(t *testing.T, x, y []byte) {
		a, b := decodeSet(x), decodeSet(y)
		union, inter, diff := a.Union(b), a.Intersect(b), a.Difference(b)
		for _, s := range []Set{a, b, union, inter, diff, a.Complement()} {
			checkNormalized(t, s)
			back, err := ParseSet(s.String())
			if err != nil || !back.Equal(s) {
				t.Fatalf("ParseSet(%v.String()) = %v, %v", s, back, err)
			}
			for _, r := range s.ranges {
				if back, err := ParseRange(r.Hex()); err != nil || back != r {
					t.Fatalf("ParseRange(%v.Hex()) = %v, %v", r, back, err)
				}
			}
		}

		laws := []struct {
			name string
			ok   bool
		}{
			{"A∪B ⊇ A", union.ContainsSet(a)},
			{"A∪B ⊇ B", union.ContainsSet(b)},
			{"A ⊇ A∩B", a.ContainsSet(inter)},
			{"(A\\B)∩B = ∅", diff.Intersect(b).Empty()},
			{"(A\\B)∪(A∩B) = A", diff.Union(inter).Equal(a)},
			{"A∪B = B∪A", union.Equal(b.Union(a))},
			{"A∩B = B∩A", inter.Equal(b.Intersect(a))},
			{"A∪¬A = full", a.Union(a.Complement()).IsFull()},
			{"A∩¬A = ∅", a.Intersect(a.Complement()).Empty()},
			{"¬¬A = A", a.Complement().Complement().Equal(a)},
			{"¬(A∪B) = ¬A∩¬B", union.Complement().Equal(a.Complement().Intersect(b.Complement()))},
			{"A\\B = A∩¬B", diff.Equal(a.Intersect(b.Complement()))},
			{"|A∪B|+|A∩B| = |A|+|B|",
				math.Abs(union.Fraction()+inter.Fraction()-a.Fraction()-b.Fraction()) < 1e-9},
		}
		for _, law := range laws {
			if !law.ok {
				t.Fatalf("%s fails for A = %v, B = %v", law.name, a, b)
			}
		}

		// Membership of each side can only change at its boundaries; checking at all of them checks every hash.
		var points []uint64
		for _, s := range []Set{a, b, union, inter, diff} {
			points = append(points, boundaries(s)...)
		}
		for _, p := range points {
			inA, inB := a.Contains(p), b.Contains(p)
			if union.Contains(p) != (inA || inB) || inter.Contains(p) != (inA && inB) || diff.Contains(p) != (inA && !inB) {
				t.Fatalf("membership of %#x is wrong for A = %v, B = %v", p, a, b)
			}
		}
	})
}
