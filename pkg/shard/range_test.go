package shard

import (
	"math"
	"testing"
)

func TestRangeHex(t *testing.T) {
	tests := []struct {
		r          Range
		start, end string
	}{
		{FullRange(), "0x0000000000000000", "0x10000000000000000"},
		{PointRange(0), "0x0000000000000000", "0x0000000000000001"},
		{PointRange(math.MaxUint64), "0xffffffffffffffff", "0x10000000000000000"},
		{Range{0x10, 0x1f}, "0x0000000000000010", "0x0000000000000020"},
		{Range{0, 1<<63 - 1}, "0x0000000000000000", "0x8000000000000000"},
	}
	for _, tt := range tests {
		start, end := tt.r.Hex()
		if start != tt.start || end != tt.end {
			t.Errorf("%#v.Hex() = %s, %s; want %s, %s", tt.r, start, end, tt.start, tt.end)
		}
		back, err := ParseRange(start, end)
		if err != nil || back != tt.r {
			t.Errorf("ParseRange(%s, %s) = %#v, %v; want %#v", start, end, back, err, tt.r)
		}
	}
}

func TestParseRangeRejects(t *testing.T) {
	tests := []struct{ name, start, end string }{
		{"no prefix", "0000000000000000", "0x8000000000000000"},
		{"short", "0x0", "0x8000000000000000"},
		{"long", "0x00000000000000000", "0x8000000000000000"},
		{"uppercase", "0x000000000000000A", "0x8000000000000000"},
		{"not hex", "0x000000000000000g", "0x8000000000000000"},
		{"2^64 as start", "0x10000000000000000", "0x10000000000000000"},
		{"empty", "0x8000000000000000", "0x8000000000000000"},
		{"reversed", "0x8000000000000001", "0x8000000000000000"},
		{"17 digits not 2^64", "0x0000000000000000", "0x10000000000000001"},
		{"signed", "0x-000000000000001", "0x8000000000000000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if r, err := ParseRange(tt.start, tt.end); err == nil {
				t.Errorf("ParseRange(%q, %q) = %#v, want an error", tt.start, tt.end, r)
			}
		})
	}
}

func TestRangeFraction(t *testing.T) {
	tests := []struct {
		r    Range
		want float64
	}{
		{FullRange(), 1},
		{Range{0, 1<<63 - 1}, 0.5},
		{Range{1 << 62, 1<<63 - 1}, 0.25},
		{PointRange(7), 1.0 / (1 << 64)},
		{Range{5, 4}, 0},
	}
	for _, tt := range tests {
		if got := tt.r.Fraction(); got != tt.want {
			t.Errorf("%v.Fraction() = %g, want %g", tt.r, got, tt.want)
		}
	}
}

func TestRangeString(t *testing.T) {
	if got, want := (Range{0, 1<<63 - 1}).String(), "[0x0000000000000000,0x8000000000000000)"; got != want {
		t.Errorf("String() = %s, want %s", got, want)
	}
}
