package shard

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The set algebra is checked against a naive model: a bitmap over sample points. Random sets have their range ends
// near 0 or near 2^64 only, so every hash in between behaves like 1<<63, and the bitmap over the ends plus that one
// middle point decides membership of every hash — the overflow-prone edges included.
const edge = 64 // hashes at each end of the space where range ends fall

var samples = func() []uint64 {
	var out []uint64
	for i := range uint64(edge) {
		out = append(out, i, top-i)
	}
	return append(out, 1<<63)
}()

type model map[uint64]bool

func randomEnd(rng *rand.Rand) uint64 {
	if rng.IntN(2) == 0 {
		return rng.Uint64N(edge)
	}
	return top - rng.Uint64N(edge)
}

func randomSet(rng *rand.Rand) (Set, model) {
	var rs []Range
	for range rng.IntN(5) {
		a, b := randomEnd(rng), randomEnd(rng)
		rs = append(rs, rg(min(a, b), max(a, b)))
	}
	m := model{}
	for _, p := range samples {
		for _, r := range rs {
			m[p] = m[p] || r.Contains(p)
		}
	}
	return NewSet(rs...), m
}

func combine(a, b model, op func(x, y bool) bool) model {
	out := model{}
	for _, p := range samples {
		out[p] = op(a[p], b[p])
	}
	return out
}

// fraction is the model's share of the space: the middle sample stands for every hash not near an end.
func (m model) fraction() float64 {
	var n float64
	for _, p := range samples {
		if m[p] {
			n++
		}
	}
	if m[1<<63] {
		n += float64(1<<64) - 2*edge - 1
	}
	return n / spaceSize
}

func TestSetAlgebraAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	ops := []struct {
		name  string
		set   func(a, b Set) Set
		model func(x, y bool) bool
	}{
		{"union", Set.Union, func(x, y bool) bool { return x || y }},
		{"intersect", Set.Intersect, func(x, y bool) bool { return x && y }},
		{"difference", Set.Difference, func(x, y bool) bool { return x && !y }},
		{"complement", func(a, _ Set) Set { return a.Complement() }, func(x, _ bool) bool { return !x }},
	}
	for range 5000 {
		a, am := randomSet(rng)
		b, bm := randomSet(rng)
		for _, op := range ops {
			got, want := op.set(a, b), combine(am, bm, op.model)
			checkNormalized(t, got)
			for _, p := range samples {
				if got.Contains(p) != want[p] {
					t.Fatalf("%s(%v, %v) = %v: Contains(%#x) = %v, model says %v",
						op.name, a, b, got, p, got.Contains(p), want[p])
				}
			}
			if diff := math.Abs(got.Fraction() - want.fraction()); diff > 1e-12 {
				t.Fatalf("%s(%v, %v) = %v: Fraction() = %g, model says %g", op.name, a, b, got, got.Fraction(), want.fraction())
			}
		}
	}
}

// checkNormalized fails unless s's ranges are valid, sorted, disjoint and not adjacent.
func checkNormalized(t *testing.T, s Set) {
	t.Helper()
	for i, r := range s.ranges {
		if !r.Valid() {
			t.Fatalf("%v: range %d is empty", s, i)
		}
		if i > 0 {
			prev := s.ranges[i-1]
			if prev.Last == top || r.First <= prev.Last+1 {
				t.Fatalf("%v: ranges %d and %d overlap or touch", s, i-1, i)
			}
		}
	}
}
