package shard

import "testing"

func TestSetAlgebra(t *testing.T) {
	tests := []struct {
		name                         string
		a, b                         Set
		union, intersect, difference Set
	}{
		{"both empty", Set{}, Set{}, Set{}, Set{}, Set{}},
		{"with empty", NewSet(rg(1, 5)), Set{}, NewSet(rg(1, 5)), Set{}, NewSet(rg(1, 5))},
		{"empty minus", Set{}, NewSet(rg(1, 5)), NewSet(rg(1, 5)), Set{}, Set{}},
		{"disjoint", NewSet(rg(0, 4)), NewSet(rg(10, 14)),
			NewSet(rg(0, 4), rg(10, 14)), Set{}, NewSet(rg(0, 4))},
		{"adjacent", NewSet(rg(0, 4)), NewSet(rg(5, 9)), NewSet(rg(0, 9)), Set{}, NewSet(rg(0, 4))},
		{"overlapping", NewSet(rg(0, 10)), NewSet(rg(5, 15)),
			NewSet(rg(0, 15)), NewSet(rg(5, 10)), NewSet(rg(0, 4))},
		{"hole punched", NewSet(rg(0, 10)), NewSet(rg(3, 3)),
			NewSet(rg(0, 10)), NewSet(rg(3, 3)), NewSet(rg(0, 2), rg(4, 10))},
		{"one b over many a", NewSet(rg(0, 2), rg(5, 7), rg(10, 12)), NewSet(rg(1, 11)),
			NewSet(rg(0, 12)), NewSet(rg(1, 2), rg(5, 7), rg(10, 11)), NewSet(rg(0, 0), rg(12, 12))},
		{"many b over one a", NewSet(rg(0, 20)), NewSet(rg(2, 3), rg(6, 7), rg(19, 25)),
			NewSet(rg(0, 25)), NewSet(rg(2, 3), rg(6, 7), rg(19, 20)), NewSet(rg(0, 1), rg(4, 5), rg(8, 18))},
		{"b spans two a", NewSet(rg(0, 5), rg(10, 15)), NewSet(rg(3, 12)),
			NewSet(rg(0, 15)), NewSet(rg(3, 5), rg(10, 12)), NewSet(rg(0, 2), rg(13, 15))},
		{"full minus point at 0", Full(), Point(0), Full(), Point(0), NewSet(rg(1, top))},
		{"full minus point at top", Full(), Point(top), Full(), Point(top), NewSet(rg(0, top-1))},
		{"full minus middle", Full(), NewSet(rg(1, top-1)), Full(), NewSet(rg(1, top-1)),
			NewSet(rg(0, 0), rg(top, top))},
		{"full minus full", Full(), Full(), Full(), Full(), Set{}},
		{"halves", NewSet(rg(0, 1<<63-1)), NewSet(rg(1<<63, top)), Full(), Set{}, NewSet(rg(0, 1<<63-1))},
		{"top ranges", NewSet(rg(top-10, top)), NewSet(rg(top-3, top)),
			NewSet(rg(top-10, top)), NewSet(rg(top-3, top)), NewSet(rg(top-10, top-4))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.a.Union(tt.b); !got.Equal(tt.union) {
				t.Errorf("%v ∪ %v = %v, want %v", tt.a, tt.b, got, tt.union)
			}
			if got := tt.b.Union(tt.a); !got.Equal(tt.union) {
				t.Errorf("%v ∪ %v = %v, want %v", tt.b, tt.a, got, tt.union)
			}
			if got := tt.a.Intersect(tt.b); !got.Equal(tt.intersect) {
				t.Errorf("%v ∩ %v = %v, want %v", tt.a, tt.b, got, tt.intersect)
			}
			if got := tt.b.Intersect(tt.a); !got.Equal(tt.intersect) {
				t.Errorf("%v ∩ %v = %v, want %v", tt.b, tt.a, got, tt.intersect)
			}
			if got := tt.a.Difference(tt.b); !got.Equal(tt.difference) {
				t.Errorf("%v \\ %v = %v, want %v", tt.a, tt.b, got, tt.difference)
			}
			if got := tt.a.Overlaps(tt.b); got != !tt.intersect.Empty() {
				t.Errorf("%v.Overlaps(%v) = %v", tt.a, tt.b, got)
			}
			if got := tt.a.ContainsSet(tt.b); got != tt.b.Difference(tt.a).Empty() {
				t.Errorf("%v.ContainsSet(%v) = %v", tt.a, tt.b, got)
			}
		})
	}
}

func TestComplement(t *testing.T) {
	tests := []struct{ s, want Set }{
		{Set{}, Full()},
		{Full(), Set{}},
		{Point(0), NewSet(rg(1, top))},
		{NewSet(rg(5, 9), rg(20, top)), NewSet(rg(0, 4), rg(10, 19))},
	}
	for _, tt := range tests {
		if got := tt.s.Complement(); !got.Equal(tt.want) {
			t.Errorf("%v.Complement() = %v, want %v", tt.s, got, tt.want)
		}
	}
}

func TestOperationsLeaveOperandsAlone(t *testing.T) {
	a, b := NewSet(rg(0, 10), rg(20, 30)), NewSet(rg(5, 25))
	aText, bText := a.String(), b.String()
	_ = a.Union(b)
	_ = a.Intersect(b)
	_ = a.Difference(b)
	_ = b.Complement()
	if a.String() != aText || b.String() != bText {
		t.Errorf("operands changed: %v, %v", a, b)
	}
}
