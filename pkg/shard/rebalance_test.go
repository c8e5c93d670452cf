package shard

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// ids is the shard IDs 0..n-1.
func ids(n int) []ShardID {
	out := make([]ShardID, n)
	for i := range out {
		out[i] = ShardID(i)
	}
	return out
}

// splitAssignment is a fresh n-shard deployment: shard i owns Split(n)[i].
func splitAssignment(n int) Assignment {
	a := Assignment{}
	for i, s := range Split(n) {
		a[ShardID(i)] = s
	}
	return a
}

// movedFraction is the share of the space that changes owner between old and new.
func movedFraction(old, new Assignment) float64 {
	var f float64
	for _, m := range Diff(old, new) {
		f += m.Ranges.Fraction()
	}
	return f
}

// checkBalanced fails unless a is valid and every shard in shards owns its exact even share.
func checkBalanced(t *testing.T, a Assignment, shards []ShardID) {
	t.Helper()
	if err := a.Validate(); err != nil {
		t.Fatalf("invalid assignment %v: %v", a, err)
	}
	if len(shards) == 1 {
		return
	}
	want := quotas(len(shards))
	for i, id := range shards {
		if n, _ := a[id].count(); n != want[i] {
			t.Fatalf("shard %d owns %d hashes, want %d", id, n, want[i])
		}
	}
}

func TestSplit(t *testing.T) {
	if Split(0) != nil || Split(-1) != nil {
		t.Error("Split of no shards is not nil")
	}
	if got := Split(1); len(got) != 1 || !got[0].IsFull() {
		t.Errorf("Split(1) = %v, want the full space", got)
	}
	if got := Split(2); !got[0].Equal(NewSet(rg(0, 1<<63-1))) || !got[1].Equal(NewSet(rg(1<<63, top))) {
		t.Errorf("Split(2) = %v, want the two halves", got)
	}
	if got, want := Split(3)[0], NewSet(rg(0, 0x5555555555555555)); !got.Equal(want) {
		t.Errorf("Split(3)[0] = %v, want %v (the first shard takes the extra hash)", got, want)
	}
	for n := 1; n <= 17; n++ {
		sets := Split(n)
		a := splitAssignment(n)
		checkBalanced(t, a, ids(n))
		var next uint64
		for i, s := range sets {
			if s.RangeCount() != 1 || s.ranges[0].First != next {
				t.Fatalf("Split(%d)[%d] = %v, want one range from %#x", n, i, s, next)
			}
			next = s.ranges[0].Last + 1
		}
		if got := Rebalance(Assignment{}, ids(n)); !got.Equal(a) {
			t.Errorf("Rebalance of nothing over %d shards = %v, want Split(%d)", n, got, n)
		}
	}
}

// Going from m to n shards moves only |m-n|/max(m,n) of the space, and a second Rebalance moves nothing.
func TestRebalanceMovesLittle(t *testing.T) {
	for m := 1; m <= 9; m++ {
		for n := 1; n <= 9; n++ {
			old := splitAssignment(m)
			got := Rebalance(old, ids(n))
			checkBalanced(t, got, ids(n))
			want := math.Abs(float64(m-n)) / float64(max(m, n))
			if moved := movedFraction(old, got); math.Abs(moved-want) > 1e-9 {
				t.Errorf("%d -> %d shards moved %.6f of the space, want %.6f", m, n, moved, want)
			}
			if again := Rebalance(got, ids(n)); !again.Equal(got) {
				t.Errorf("%d -> %d shards: a second Rebalance moved %v", m, n, Diff(got, again))
			}
			for id, s := range got {
				if s.RangeCount() > max(m, n) {
					t.Errorf("%d -> %d shards: shard %d is in %d pieces", m, n, id, s.RangeCount())
				}
			}
		}
	}
}

func TestRebalance(t *testing.T) {
	const half = 1 << 63
	tests := []struct {
		name    string
		current Assignment
		shards  []ShardID
		want    Assignment
	}{
		{"no shards", halves(), nil, Assignment{}},
		{"one shard takes all", halves(), []ShardID{1}, Assignment{1: Full()}},
		{"duplicates ignored", halves(), []ShardID{1, 0, 1}, halves()},
		{"unchanged", halves(), []ShardID{0, 1}, halves()},
		{"renumbered shards start over", halves(), []ShardID{5, 6},
			Assignment{5: NewSet(rg(0, half-1)), 6: NewSet(rg(half, top))}},
		{"middle shard leaves: neighbours grow into its range", splitAssignment(3), []ShardID{0, 2},
			Assignment{0: NewSet(rg(0, half-1)), 2: NewSet(rg(half, top))}},
		{"gap filled by its neighbour", Assignment{0: NewSet(rg(0, half-11)), 1: NewSet(rg(half, top))}, []ShardID{0, 1},
			halves()},
		{"overlap stays with the lower ID", Assignment{0: NewSet(rg(0, half+9)), 1: NewSet(rg(half, top))}, []ShardID{0, 1},
			halves()},
		{"shard in two pieces keeps them", Assignment{0: NewSet(rg(0, 1<<62-1), rg(3<<62, top)), 1: NewSet(rg(1<<62, 3<<62-1))},
			[]ShardID{0, 1},
			Assignment{0: NewSet(rg(0, 1<<62-1), rg(3<<62, top)), 1: NewSet(rg(1<<62, 3<<62-1))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.current.Clone()
			got := Rebalance(tt.current, tt.shards)
			if !got.Equal(tt.want) {
				t.Errorf("Rebalance = %v, want %v", got, tt.want)
			}
			if !tt.current.Equal(before) {
				t.Errorf("Rebalance changed its input to %v", tt.current)
			}
		})
	}
}

// A canary shard that is left out of a Rebalance gives its namespace back to the shard it was carved from.
func TestRebalanceUndoesCarve(t *testing.T) {
	base := splitAssignment(3)
	for _, ns := range []string{"shop", "billing", "search", "kube-system"} {
		carved := Carve(base, ns, 9)
		if got := Rebalance(carved, ids(3)); !got.Equal(base) {
			t.Errorf("Rebalance after carving %q = %v, want %v", ns, got, base)
		}
	}
}

// A random walk of shard sets: every step is balanced and moves exactly the excess over each shard's share.
func TestRebalanceRandomWalk(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	current := Assignment{}
	shards := []ShardID{0}
	worst := 0
	for step := range 500 {
		// Add or drop a random shard, keeping between 1 and 12 of the IDs 0..15.
		id := ShardID(rng.IntN(16))
		if i := slices.Index(shards, id); i >= 0 && len(shards) > 1 {
			shards = slices.Delete(shards, i, i+1)
		} else if i < 0 && len(shards) < 12 {
			shards = append(shards, id)
		}
		slices.Sort(shards)

		next := Rebalance(current, shards)
		checkBalanced(t, next, shards)
		kept := current[shards[0]].Fraction() // what stays with its owner, if Rebalance is minimal
		if len(shards) > 1 {
			kept = 0
			for i, q := range quotas(len(shards)) {
				kept += math.Min(float64(q)/spaceSize, current[shards[i]].Fraction())
			}
		}
		if step > 0 {
			if moved := movedFraction(current, next); math.Abs(moved-(1-kept)) > 1e-9 {
				t.Fatalf("step %d to %v moved %.9f, want %.9f", step, shards, moved, 1-kept)
			}
		}
		for _, s := range next {
			worst = max(worst, s.RangeCount())
		}
		current = next
	}
	// Fragmentation stays bounded (about 2x the shard count here); a regression would show as steady growth.
	if worst > 48 {
		t.Errorf("a shard ended up in %d pieces", worst)
	}
	t.Logf("most pieces of one shard over the walk: %d", worst)
}
