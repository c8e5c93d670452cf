package shard

import (
	"encoding/json"
	"math"
	"slices"
	"testing"
)

const top = math.MaxUint64

// rg is the inclusive range first..last.
func rg(first, last uint64) Range { return Range{First: first, Last: last} }

func TestNewSetNormalizes(t *testing.T) {
	tests := []struct {
		name string
		in   []Range
		want []Range
	}{
		{"nothing", nil, nil},
		{"empty ranges dropped", []Range{rg(5, 4), rg(top, 0)}, nil},
		{"sorted", []Range{rg(20, 30), rg(0, 10)}, []Range{rg(0, 10), rg(20, 30)}},
		{"overlapping merged", []Range{rg(0, 10), rg(5, 15)}, []Range{rg(0, 15)}},
		{"adjacent merged", []Range{rg(0, 10), rg(11, 20)}, []Range{rg(0, 20)}},
		{"one apart kept apart", []Range{rg(0, 10), rg(12, 20)}, []Range{rg(0, 10), rg(12, 20)}},
		{"contained", []Range{rg(0, 100), rg(10, 20)}, []Range{rg(0, 100)}},
		{"duplicates", []Range{rg(3, 3), rg(3, 3)}, []Range{rg(3, 3)}},
		{"top edge", []Range{rg(top, top), rg(top-1, top-1)}, []Range{rg(top-1, top)}},
		{"after a range ending at top", []Range{rg(10, top), rg(top, top)}, []Range{rg(10, top)}},
		{"halves make full", []Range{rg(1<<63, top), rg(0, 1<<63-1)}, []Range{FullRange()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.in)
			got := NewSet(tt.in...)
			if !slices.Equal(got.Ranges(), tt.want) {
				t.Errorf("NewSet(%v) = %v, want %v", tt.in, got.Ranges(), tt.want)
			}
			if !slices.Equal(in, tt.in) {
				t.Errorf("NewSet changed its argument to %v", tt.in)
			}
		})
	}
}

func TestSetContains(t *testing.T) {
	s := NewSet(rg(10, 20), rg(30, 30), rg(top-5, top))
	tests := []struct {
		h    uint64
		want bool
	}{
		{0, false}, {9, false}, {10, true}, {15, true}, {20, true}, {21, false},
		{29, false}, {30, true}, {31, false}, {top - 6, false}, {top - 5, true}, {top, true},
	}
	for _, tt := range tests {
		if got := s.Contains(tt.h); got != tt.want {
			t.Errorf("%v.Contains(%d) = %v, want %v", s, tt.h, got, tt.want)
		}
	}
	if (Set{}).Contains(0) || !Full().Contains(0) || !Full().Contains(top) {
		t.Error("empty or full set has the wrong members")
	}
}

func TestSetContainsNamespace(t *testing.T) {
	h := NamespaceHash("team-a")
	if s := Point(h); !s.ContainsNamespace("team-a") || s.ContainsNamespace("team-b") {
		t.Errorf("Point(hash(team-a)) = %v has the wrong namespaces", s)
	}
}

func TestSetPredicates(t *testing.T) {
	tests := []struct {
		name        string
		s           Set
		empty, full bool
		fraction    float64
		rangeCount  int
	}{
		{"zero", Set{}, true, false, 0, 0},
		{"normalized empty", NewSet(rg(2, 1)), true, false, 0, 0},
		{"full", Full(), false, true, 1, 1},
		{"full from pieces", NewSet(rg(0, 5), rg(6, top)), false, true, 1, 1},
		{"almost full", NewSet(rg(1, top)), false, false, 1, 1},
		{"two quarters", NewSet(rg(0, 1<<62-1), rg(1<<63, 1<<63+1<<62-1)), false, false, 0.5, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.Empty(); got != tt.empty {
				t.Errorf("Empty() = %v", got)
			}
			if got := tt.s.IsFull(); got != tt.full {
				t.Errorf("IsFull() = %v", got)
			}
			if got := tt.s.Fraction(); got != tt.fraction {
				t.Errorf("Fraction() = %g, want %g", got, tt.fraction)
			}
			if got := tt.s.RangeCount(); got != tt.rangeCount {
				t.Errorf("RangeCount() = %d, want %d", got, tt.rangeCount)
			}
		})
	}
}

func TestSetRangesIsACopy(t *testing.T) {
	s := NewSet(rg(1, 2))
	s.Ranges()[0] = rg(7, 9)
	if !s.Equal(NewSet(rg(1, 2))) {
		t.Errorf("changing Ranges() changed the set to %v", s)
	}
}

func TestSetString(t *testing.T) {
	tests := []struct {
		s    Set
		want string
	}{
		{Set{}, "{}"},
		{Full(), "{[0x0000000000000000,0x10000000000000000)}"},
		{NewSet(rg(0, 15), rg(32, 32)), "{[0x0000000000000000,0x0000000000000010) [0x0000000000000020,0x0000000000000021)}"},
	}
	for _, tt := range tests {
		if got := tt.s.String(); got != tt.want {
			t.Errorf("String() = %s, want %s", got, tt.want)
		}
		back, err := ParseSet(tt.want)
		if err != nil || !back.Equal(tt.s) {
			t.Errorf("ParseSet(%s) = %v, %v; want %v", tt.want, back, err, tt.s)
		}
	}
}

func TestParseSet(t *testing.T) {
	tests := []struct {
		name, text string
		want       Set
		wantErr    bool
	}{
		{"spaces", "  { [0x0000000000000000,0x0000000000000010)   }  ", NewSet(rg(0, 15)), false},
		{"unsorted and touching", "{[0x0000000000000010,0x0000000000000020) [0x0000000000000000,0x0000000000000010)}",
			NewSet(rg(0, 31)), false},
		{"empty", "{}", Set{}, false},
		{"no braces", "[0x0000000000000000,0x0000000000000010)", Set{}, true},
		{"no opening brace", "[0x0000000000000000,0x0000000000000010)}", Set{}, true},
		{"closed interval", "{[0x0000000000000000,0x0000000000000010]}", Set{}, true},
		{"no comma", "{[0x0000000000000000 0x0000000000000010)}", Set{}, true},
		{"bad hex", "{[0x0,0x0000000000000010)}", Set{}, true},
		{"empty range", "{[0x0000000000000010,0x0000000000000010)}", Set{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSet(tt.text)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseSet(%q) error = %v, want error %v", tt.text, err, tt.wantErr)
			}
			if !got.Equal(tt.want) {
				t.Errorf("ParseSet(%q) = %v, want %v", tt.text, got, tt.want)
			}
		})
	}
}

func TestSetJSON(t *testing.T) {
	type config struct {
		Owned Set `json:"owned"`
	}
	in := config{Owned: NewSet(rg(0, 15), rg(top, top))}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"owned":"{[0x0000000000000000,0x0000000000000010) [0xffffffffffffffff,0x10000000000000000)}"}`
	if string(data) != want {
		t.Errorf("json.Marshal = %s, want %s", data, want)
	}
	var out config
	if err := json.Unmarshal(data, &out); err != nil || !out.Owned.Equal(in.Owned) {
		t.Errorf("json.Unmarshal = %v, %v; want %v", out.Owned, err, in.Owned)
	}
	if err := json.Unmarshal([]byte(`{"owned":"[0x0,0x1)"}`), &out); err == nil {
		t.Error("json.Unmarshal of a malformed set succeeded")
	}
}
