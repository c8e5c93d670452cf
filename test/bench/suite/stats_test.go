package suite

import (
	"math"
	"testing"
)

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		name    string
		samples []float64
		want    Summary
	}{
		{"none", nil, Summary{}},
		{"one", []float64{4}, Summary{Median: 4, Min: 4, Max: 4}},
		{"odd, unsorted", []float64{3, 1, 2}, Summary{Median: 2, Min: 1, Max: 3, Spread: 1}},
		{"even interpolates", []float64{1, 2, 3, 10}, Summary{Median: 2.5, Min: 1, Max: 10, Spread: 3.6}},
		{"zero median has no spread", []float64{-1, 0, 1}, Summary{Median: 0, Min: -1, Max: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Summarize(tc.samples); got != tc.want {
				t.Errorf("Summarize(%v) = %+v, want %+v", tc.samples, got, tc.want)
			}
		})
	}
}

func TestQuantile(t *testing.T) {
	sorted := []float64{10, 20, 30, 40, 50}
	for _, tc := range []struct{ q, want float64 }{{0, 10}, {0.5, 30}, {1, 50}, {0.99, 49.6}, {0.25, 20}} {
		if got := Quantile(sorted, tc.q); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("Quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
}

func TestPairedRatio(t *testing.T) {
	got := Paired([]float64{2, 3, 8}, []float64{1, 3}, Ratio)
	if len(got) != 2 || got[0] != 2 || got[1] != 1 {
		t.Errorf("paired ratios = %v, want [2 1] (the unmatched third sample dropped)", got)
	}
	if r := Ratio(1, 0); !math.IsNaN(r) {
		t.Errorf("Ratio(1, 0) = %v, want NaN", r)
	}
}
