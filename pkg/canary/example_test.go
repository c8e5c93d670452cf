package canary_test

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/canary"
	"github.com/fedmesh/fedmesh/pkg/shard"
)

// The manager's loop in miniature: read the plan from the spec, call Step, turn the Result into an assignment with
// CanaryAssignment, and hand over what shard.Diff says moves. Here the canary (shard 9) first takes the named
// namespace "shop" from its stable owner, then 10% of every stable shard; a failed analysis gives it all back.
func Example() {
	plan, err := canary.FromSpec(&v1alpha1.Canary{
		Namespaces: []string{"shop"},
		Steps:      []v1alpha1.CanaryStep{{Percent: 10, Pause: &metav1.Duration{Duration: 5 * time.Minute}}},
		Analysis:   &v1alpha1.CanaryAnalysis{MaxRestarts: new(int32)},
	})
	if err != nil {
		panic(err)
	}
	stable := shard.Assignment{0: shard.Split(2)[0], 1: shard.Split(2)[1]}
	const canaryShard shard.ShardID = 9
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	published, state := stable, canary.State{}
	obs := canary.Observation{Ready: 1, Total: 1}
	step := func() {
		var res canary.Result
		state, res = canary.Step(plan, state, obs, now)
		for _, e := range res.Events {
			fmt.Printf("event %s: %s\n", e.Reason, e.Message)
		}
		next := canary.CanaryAssignment(stable, canaryShard, state)
		for _, m := range shard.Diff(published, next) {
			fmt.Printf("  move %.2f%% in %d ranges: shard %d -> shard %d\n",
				m.Ranges.Fraction()*100, m.Ranges.RangeCount(), m.From, m.To)
		}
		// The manager revokes, waits for the ACKs, grants; then it reports what the canary owns.
		published, obs.Owned = next, next[canaryShard]
	}

	step() // named step: shop moves
	step() // handed over: the pause starts
	now = now.Add(5 * time.Minute)
	step() // 10% of each stable shard moves too
	obs.Restarts = 3
	step() // handed over, but the canary restarted: everything goes back
	fmt.Println("shop is back on its stable shard:", published.Equal(stable))
	// Output:
	// event StepStarted: step 1 of 2 (namespaces shop): handing over
	//   move 0.00% in 1 ranges: shard 0 -> shard 9
	// event Analyzing: step 1 of 2 (namespaces shop): handed over; analysing for 5m0s
	// event StepStarted: step 2 of 2 (10%): handing over
	//   move 5.00% in 8 ranges: shard 0 -> shard 9
	//   move 5.00% in 8 ranges: shard 1 -> shard 9
	// event Analyzing: step 2 of 2 (10%): handed over; analysing for 5m0s
	// event AnalysisFailed: step 2 of 2 (10%): pod restarts: 3, over the maximum 0; every namespace returns to the stable shards
	//   move 5.00% in 9 ranges: shard 9 -> shard 0
	//   move 5.00% in 8 ranges: shard 9 -> shard 1
	// shop is back on its stable shard: true
}
