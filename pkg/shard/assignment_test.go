package shard

import (
	"strings"
	"testing"
)

// halves is shard 0 owning the low half of the space and shard 1 the high half.
func halves() Assignment {
	return Assignment{0: NewSet(rg(0, 1<<63-1)), 1: NewSet(rg(1<<63, top))}
}

func TestAssignmentOwner(t *testing.T) {
	a := halves()
	tests := []struct {
		name string
		a    Assignment
		h    uint64
		want ShardID
		ok   bool
	}{
		{"low end", a, 0, 0, true},
		{"last of low half", a, 1<<63 - 1, 0, true},
		{"first of high half", a, 1 << 63, 1, true},
		{"top", a, top, 1, true},
		{"nobody", Assignment{3: Point(5)}, 6, NoShard, false},
		{"empty assignment", Assignment{}, 6, NoShard, false},
		{"overlap goes to the lower ID", Assignment{4: Full(), 2: Point(9)}, 9, 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.a.Owner(tt.h)
			if got != tt.want || ok != tt.ok {
				t.Errorf("Owner(%#x) = %d, %v; want %d, %v", tt.h, got, ok, tt.want, tt.ok)
			}
		})
	}
	ns := "payments"
	want := ShardID(0)
	if NamespaceHash(ns) >= 1<<63 {
		want = 1
	}
	if got, ok := a.NamespaceOwner(ns); got != want || !ok {
		t.Errorf("NamespaceOwner(%q) = %d, %v; want %d", ns, got, ok, want)
	}
}

func TestAssignmentValidate(t *testing.T) {
	tests := []struct {
		name    string
		a       Assignment
		wantErr []string // substrings the error must have; none means valid
	}{
		{"halves", halves(), nil},
		{"one shard", Assignment{7: Full()}, nil},
		{"empty entries ignored", Assignment{0: Full(), 1: Set{}}, nil},
		{"empty", Assignment{}, []string{"no shard owns [0x0000000000000000,0x10000000000000000)"}},
		{"gap", Assignment{0: NewSet(rg(0, 9)), 1: NewSet(rg(20, top))},
			[]string{"no shard owns [0x000000000000000a,0x0000000000000014)"}},
		{"overlap", Assignment{0: NewSet(rg(0, 10)), 1: NewSet(rg(10, top))},
			[]string{"shards 0 and 1 both own [0x000000000000000a,0x000000000000000b)"}},
		{"overlap and gap", Assignment{0: NewSet(rg(0, 10)), 1: NewSet(rg(5, 20)), 2: NewSet(rg(30, top))},
			[]string{"shards 0 and 1 both own [0x0000000000000005,0x000000000000000b)",
				"no shard owns [0x0000000000000015,0x000000000000001e)"}},
		{"negative ID", Assignment{NoShard: Full()}, []string{"shard ID -1 is negative"}},
		{"many gaps are summarized", Assignment{0: NewSet(rg(0, 0), rg(2, 2), rg(4, 4), rg(6, 6), rg(8, 8), rg(10, top))},
			[]string{"no shard owns", "and 1 more ranges"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.a.Validate()
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error with %q", tt.wantErr)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Validate() = %q, want it to say %q", err, want)
				}
			}
		})
	}
}

func TestAssignmentEqual(t *testing.T) {
	tests := []struct {
		name string
		a, b Assignment
		want bool
	}{
		{"same", halves(), halves(), true},
		{"empty entry is no entry", Assignment{0: Full(), 1: Set{}}, Assignment{0: Full()}, true},
		{"different owner", Assignment{0: Full()}, Assignment{1: Full()}, false},
		{"different ranges", halves(), Assignment{0: NewSet(rg(0, 1<<63)), 1: NewSet(rg(1<<63+1, top))}, false},
		{"nil and empty", nil, Assignment{}, true},
	}
	for _, tt := range tests {
		if got := tt.a.Equal(tt.b); got != tt.want {
			t.Errorf("%s: Equal = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestReassign(t *testing.T) {
	tests := []struct {
		name string
		a    Assignment
		s    Set
		to   ShardID
		want Assignment
	}{
		{"across the halves to a new shard", halves(), NewSet(rg(1<<62, 1<<63+1<<62-1)), 2,
			Assignment{0: NewSet(rg(0, 1<<62-1)), 1: NewSet(rg(1<<63+1<<62, top)), 2: NewSet(rg(1<<62, 1<<63+1<<62-1))}},
		{"to its owner is a no-op", halves(), Point(3), 0, halves()},
		{"everything", halves(), Full(), 1, Assignment{1: Full()}},
		{"nothing", halves(), Set{}, 5, halves()},
		{"into a gap", Assignment{0: NewSet(rg(0, 9))}, NewSet(rg(10, top)), 1,
			Assignment{0: NewSet(rg(0, 9)), 1: NewSet(rg(10, top))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.a.Clone()
			got := Reassign(tt.a, tt.s, tt.to)
			if !got.Equal(tt.want) {
				t.Errorf("Reassign = %v, want %v", got, tt.want)
			}
			if !tt.a.Equal(before) {
				t.Errorf("Reassign changed its input to %v", tt.a)
			}
		})
	}
}

func TestCarve(t *testing.T) {
	const canary ShardID = 9
	a := Assignment{0: Split(3)[0], 1: Split(3)[1], 2: Split(3)[2]}
	h := NamespaceHash("shop")
	owner, _ := a.Owner(h)

	carved := Carve(a, "shop", canary)
	if err := carved.Validate(); err != nil {
		t.Fatalf("carved assignment invalid: %v", err)
	}
	if got, _ := carved.NamespaceOwner("shop"); got != canary {
		t.Errorf("shop is owned by %d after the carve, want %d", got, canary)
	}
	if !carved[canary].Equal(Point(h)) {
		t.Errorf("canary owns %v, want only the point %#x", carved[canary], h)
	}
	moves := Diff(a, carved)
	if len(moves) != 1 || moves[0].From != owner || moves[0].To != canary || !moves[0].Ranges.Equal(Point(h)) {
		t.Errorf("Diff(before, after carve) = %v, want one point moved from %d to %d", moves, owner, canary)
	}
	if back := Carve(carved, "shop", owner); !back.Equal(a) {
		t.Errorf("carving back gives %v, want %v", back, a)
	}
}
