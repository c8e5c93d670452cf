package sharding

import (
	"fmt"
	"math/rand/v2"
	"testing"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/shard"
)

// split is a ShardingConfig's namespaces split over n shards at epoch 1.
func split(namespaces []string, n int) Published {
	return Published{Epoch: 1, Assignment: shard.SplitByNamespaces(namespaces, ids(n))}
}

func ids(n int) []shard.ShardID {
	out := make([]shard.ShardID, n)
	for i := range out {
		out[i] = shard.ShardID(i)
	}
	return out
}

// No range is ever owned by two shards, within a published assignment or across two consecutive ones: a range
// that changes owner passes through "nobody".
func checkSafe(t *testing.T, from, to Published) {
	t.Helper()
	if err := overlapFree(to.Assignment); err != nil {
		t.Fatalf("epoch %d: %v", to.Epoch, err)
	}
	for _, a := range from.Assignment.Shards() {
		for _, b := range to.Assignment.Shards() {
			if a != b && from.Assignment[a].Overlaps(to.Assignment[b]) {
				t.Fatalf("epoch %d -> %d moves %v straight from shard %d to shard %d", from.Epoch, to.Epoch,
					from.Assignment[a].Intersect(to.Assignment[b]), a, b)
			}
		}
	}
}

func overlapFree(a shard.Assignment) error {
	ss := a.Shards()
	for i, x := range ss {
		for _, y := range ss[i+1:] {
			if a[x].Overlaps(a[y]) {
				return fmt.Errorf("shards %d and %d overlap", x, y)
			}
		}
	}
	return nil
}

// converge runs Step from pub to the target of n shards and returns the final assignment and the number of steps.
func converge(t *testing.T, pub Published, n int, namespaces []string) (Published, int) {
	t.Helper()
	steps := 0
	for {
		next, done := Step(pub, Target(pub, ids(n), namespaces))
		if done {
			return pub, steps
		}
		checkSafe(t, pub, next)
		if next.Epoch != pub.Epoch+1 {
			t.Fatalf("epoch %d -> %d", pub.Epoch, next.Epoch)
		}
		pub = next
		if steps++; steps > 4 {
			t.Fatalf("no convergence after %d steps", steps)
		}
	}
}

func TestScaleChangesHandOverSafely(t *testing.T) {
	var namespaces []string
	for i := range 60 {
		namespaces = append(namespaces, fmt.Sprintf("ns-%02d", i))
	}
	for _, tc := range []struct{ from, to, maxSteps int }{
		{2, 3, 2}, {3, 2, 2}, {1, 4, 2}, {4, 1, 2}, {5, 5, 0}, {2, 8, 2},
	} {
		t.Run(fmt.Sprintf("%d-to-%d", tc.from, tc.to), func(t *testing.T) {
			pub, _ := converge(t, split(namespaces, tc.from), tc.from, namespaces)
			final, steps := converge(t, pub, tc.to, namespaces)
			if steps > tc.maxSteps {
				t.Errorf("%d steps, want at most %d (revoke, grant)", steps, tc.maxSteps)
			}
			if err := final.Assignment.Validate(); err != nil {
				t.Fatalf("final assignment: %v", err)
			}
			if len(final.Assignment.Shards()) != tc.to {
				t.Errorf("final shards %v, want %d", final.Assignment.Shards(), tc.to)
			}
		})
	}
}

// A random walk of scale changes, each interrupted or not, always stays safe and always converges. Restarting
// the manager is modelled by recomputing the target from the published state alone, as Target does.
func TestRandomScaleWalkStaysSafe(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var namespaces []string
	for i := range 50 {
		namespaces = append(namespaces, fmt.Sprintf("ns-%d", i))
	}
	pub := split(namespaces, 2)
	for range 300 {
		n := 1 + r.IntN(7)
		next, done := Step(pub, Target(pub, ids(n), namespaces[:r.IntN(len(namespaces))]))
		if done {
			continue
		}
		checkSafe(t, pub, next)
		pub = next
		if r.IntN(3) == 0 { // sometimes finish the handover before the next change
			pub, _ = converge(t, pub, n, namespaces)
		}
	}
}

func TestStepIsIdempotentAtTarget(t *testing.T) {
	pub := split([]string{"a", "b", "c"}, 3)
	next, done := Step(pub, Target(pub, ids(3), []string{"a", "b", "c", "d"}))
	if !done || next.Epoch != pub.Epoch {
		t.Fatalf("a published target stepped to epoch %d (done %v)", next.Epoch, done)
	}
}

// A ShardingConfig starts by owning nothing, at the epoch after the one its proxies hold (an earlier one of its
// name, deleted and created again, or a status lost), and is granted its split by the next step.
func TestInitialAfterAnEarlierIncarnation(t *testing.T) {
	namespaces := []string{"a", "b", "c", "d"}
	if pub := Initial(0); pub.Epoch != 1 || !pub.Assignment.Owned().Empty() {
		t.Fatalf("fresh: %+v, want nothing owned at epoch 1", pub)
	}
	if final, steps := converge(t, Initial(0), 2, namespaces); steps != 1 || !final.Assignment.Owned().IsFull() || final.Epoch != 2 {
		t.Errorf("fresh, after %d steps: %+v, want the split granted in one step at epoch 2", steps, final)
	}
	pub := Initial(7)
	if pub.Epoch != 8 || !pub.Assignment.Owned().Empty() {
		t.Fatalf("after proxies holding epoch 7: %+v, want nothing owned at epoch 8", pub)
	}
	st := meshv1alpha1.ShardingConfigStatus{Epoch: pub.Epoch, Assignment: shard.StatusAssignment(pub.Assignment)}
	if back, err := published(&st); err != nil || back.Epoch != 8 || !back.Assignment.Owned().Empty() {
		t.Fatalf("status round trip: %+v, %v", back, err)
	}
	final, steps := converge(t, pub, 2, namespaces)
	if steps != 1 || !final.Assignment.Owned().IsFull() || final.Epoch != 9 {
		t.Errorf("after %d steps: %+v, want the split granted in one step at epoch 9", steps, final)
	}
}
