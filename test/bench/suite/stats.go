package suite

import (
	"math"
	"slices"
)

// Summary is what the report shows of a set of samples.
type Summary struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	// Spread is (Max-Min)/|Median|: how far apart the repetitions were, relative to the figure.
	Spread float64 `json:"spread"`
}

// Summarize computes the summary of samples; the zero Summary for none.
func Summarize(samples []float64) Summary {
	if len(samples) == 0 {
		return Summary{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	sum := Summary{Median: Quantile(s, 0.5), Min: s[0], Max: s[len(s)-1]}
	if sum.Median != 0 {
		sum.Spread = (sum.Max - sum.Min) / math.Abs(sum.Median)
	}
	return sum
}

// Quantile is the q-quantile (0..1) of sorted samples, interpolating between neighbours; 0 for none.
func Quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	pos := q * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(sorted)-1)
	frac := pos - float64(lo)
	return sorted[lo]*(1-frac) + sorted[hi]*frac
}

// Paired applies fn to the i-th sample of a and of b, for every repetition both have: interleaved runs make the
// i-th samples neighbours in time, so their ratio cancels drift that a ratio of medians would keep.
func Paired(a, b []float64, fn func(a, b float64) float64) []float64 {
	out := make([]float64, 0, min(len(a), len(b)))
	for i := range min(len(a), len(b)) {
		out = append(out, fn(a[i], b[i]))
	}
	return out
}

// Ratio is a/b, or NaN when b is zero.
func Ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

// Difference is a-b.
func Difference(a, b float64) float64 { return a - b }
