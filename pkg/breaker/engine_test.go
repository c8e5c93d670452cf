package breaker

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRateLimitHoldsRate offers far more than the limit over a simulated minute and checks that what gets through
// (admitted at once, or after its wait) stays within 10% of the configured rate.
func TestRateLimitHoldsRate(t *testing.T) {
	for _, tt := range []struct {
		name    string
		rule    RateLimitRule
		offered time.Duration // gap between offered requests
	}{
		{"reject only", RateLimitRule{Name: "r", QPS: 50, Burst: 5}, time.Millisecond},
		{"with waiting", RateLimitRule{Name: "r", QPS: 50, Burst: 5, MaxWait: 200 * time.Millisecond}, time.Millisecond},
		{"fractional qps", RateLimitRule{Name: "r", QPS: 0.5, MaxWait: time.Second}, 100 * time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clock := &fakeClock{now: time.Unix(0, 0)}
			e, err := New(Policy{RateLimits: []RateLimitRule{tt.rule}}, Options{Clock: clock})
			if err != nil {
				t.Fatal(err)
			}
			const window = time.Minute
			clock.now = clock.now.Add(time.Hour) // let the bucket fill, then drain its burst before counting
			for range tt.rule.burst() {
				e.Decide(Request{})
			}
			start := clock.now
			admitted := 0
			for clock.now.Sub(start) < window {
				d := e.Decide(Request{Verb: "get"})
				if d.Kind != Reject && clock.now.Add(d.Delay).Sub(start) < window {
					admitted++
				}
				clock.now = clock.now.Add(tt.offered)
			}
			got := float64(admitted) / window.Seconds()
			t.Logf("admitted %.2f/s, limit %v/s", got, tt.rule.QPS)
			if math.Abs(got-tt.rule.QPS) > 0.1*tt.rule.QPS {
				t.Errorf("admitted %.2f/s over %v, want %v/s ±10%%", got, window, tt.rule.QPS)
			}
		})
	}
}

// TestBreakerRetryAfterIsRemainingOpenTime uses a long open timeout, which it never waits out.
func TestBreakerRetryAfterIsRemainingOpenTime(t *testing.T) {
	e, err := New(Policy{Breakers: []BreakerRule{{Name: "b", ConsecutiveFailures: 1, OpenTimeout: 30 * time.Second}}},
		Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := Request{Verb: "get", Resource: "pods", Cluster: "member1"}
	e.Done(r, e.Decide(r), Outcome{Code: 500})
	d := e.Decide(r)
	if d.Kind != Reject || d.Code != 503 || d.RetryAfter <= 29*time.Second || d.RetryAfter > 30*time.Second {
		t.Fatalf("Decide on an open breaker = %+v, want 503 with RetryAfter just under 30s", d)
	}
	if got := d.RetryAfterSeconds(); got != 30 {
		t.Errorf("RetryAfterSeconds = %d, want 30", got)
	}
}

func TestUpdateRejectsInvalidPolicy(t *testing.T) {
	if _, err := New(Policy{RateLimits: []RateLimitRule{{Name: "r"}}}, Options{}); err == nil {
		t.Fatal("New accepted qps 0")
	}
	e, err := New(Policy{Deny: []DenyRule{{Name: "d"}}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Update(Policy{InFlight: []InFlightRule{{Name: "i"}}}); err == nil {
		t.Fatal("Update accepted max 0")
	}
	if got := e.Policy(); len(got.Deny) != 1 || len(got.InFlight) != 0 {
		t.Errorf("after a refused Update the policy is %+v, want the previous one", got)
	}
}

// An Update tells the observer of every breaker whose rule it restarts or drops, and nothing of one it keeps; a
// request admitted under the old rule that reports afterwards changes nothing the observer sees.
func TestUpdateTellsObserverOfRetiredBreakers(t *testing.T) {
	open := BreakerRule{Name: "b", ConsecutiveFailures: 1, OpenTimeout: time.Hour}
	for _, tt := range []struct {
		name string
		next []BreakerRule
		want string
	}{
		// The rule is still in force: the late report's change is told.
		{"unchanged", []BreakerRule{open}, "member3:closed->open"},
		{"settings changed", []BreakerRule{{Name: "b", ConsecutiveFailures: 3, OpenTimeout: time.Hour}}, "member1:open->closed member2:open->closed"},
		{"removed", nil, "removed member1 removed member2 removed member3"},
		{"renamed", []BreakerRule{{Name: "c", ConsecutiveFailures: 1, OpenTimeout: time.Hour}}, "removed member1 removed member2 removed member3"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr := &transitions{}
			obs := tr.observer().(ObserverFuncs)
			obs.BreakerRemovedFunc = func(rule, cluster string) {
				tr.mu.Lock()
				defer tr.mu.Unlock()
				tr.got = append(tr.got, "removed "+cluster)
			}
			e, err := New(Policy{Breakers: []BreakerRule{open}}, Options{Observer: obs})
			if err != nil {
				t.Fatal(err)
			}
			for _, cluster := range []string{"member1", "member2"} {
				r := Request{Verb: "get", Cluster: cluster}
				e.Done(r, e.Decide(r), Outcome{Code: 500})
			}
			// member3's breaker is created and admits a request, which reports only after the update.
			late := Request{Verb: "get", Cluster: "member3"}
			lateDecision := e.Decide(late)
			tr.got = nil

			if err := e.Update(Policy{Breakers: tt.next}); err != nil {
				t.Fatal(err)
			}
			e.Done(late, lateDecision, Outcome{Code: 500})
			if got := tr.String(); got != tt.want {
				t.Errorf("observer heard %q, want %q", got, tt.want)
			}
		})
	}
}

// ForgetCluster drops a departed cluster's breakers in every rule and tells the observer each is removed; the other
// clusters' breakers stay as they were. A request admitted before reports to the dropped breaker unheard, and the
// cluster, should it come back, starts with closed breakers.
func TestForgetClusterDropsItsBreakers(t *testing.T) {
	rules := []BreakerRule{
		{Name: "a", ConsecutiveFailures: 1, OpenTimeout: time.Hour},
		{Name: "b", ConsecutiveFailures: 3, OpenTimeout: time.Hour},
	}
	for _, tt := range []struct {
		name   string
		forget string
		// late is the cluster of a request admitted before the forget that reports its failure after; "" for none.
		late       string
		wantEvents string
		wantLeft   string
	}{
		{"open and closed breakers", "member1", "",
			"removed a/member1 removed b/member1", "a/member2=open b/member2=closed a/member3=closed b/member3=closed"},
		{"a report after the forget is unheard", "member3", "member3",
			"removed a/member3 removed b/member3", "a/member1=open b/member1=closed a/member2=open b/member2=closed"},
		{"a report to another cluster is heard", "member1", "member3",
			"removed a/member1 removed b/member1 a/member3:closed->open",
			"a/member2=open b/member2=closed a/member3=open b/member3=closed"},
		{"a cluster with no breakers", "member9", "",
			"", "a/member1=open b/member1=closed a/member2=open b/member2=closed a/member3=closed b/member3=closed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var events []string
			e, err := New(Policy{Breakers: rules}, Options{Observer: ObserverFuncs{
				BreakerChangedFunc: func(rule, cluster string, from, to BreakerState) {
					events = append(events, rule+"/"+cluster+":"+from.String()+"->"+to.String())
				},
				BreakerRemovedFunc: func(rule, cluster string) { events = append(events, "removed "+rule+"/"+cluster) },
			}})
			if err != nil {
				t.Fatal(err)
			}
			for _, cluster := range []string{"member1", "member2"} {
				r := Request{Verb: "get", Cluster: cluster}
				e.Done(r, e.Decide(r), Outcome{Code: 500})
			}
			member3 := Request{Verb: "get", Cluster: "member3"}
			e.Done(member3, e.Decide(member3), Outcome{Code: 200})
			late := Request{Verb: "get", Cluster: tt.late}
			var lateDecision Decision
			if tt.late != "" {
				lateDecision = e.Decide(late)
			}
			events = nil

			e.ForgetCluster(tt.forget)
			if tt.late != "" {
				e.Done(late, lateDecision, Outcome{Code: 500})
			}
			if got := strings.Join(events, " "); got != tt.wantEvents {
				t.Errorf("observer heard %q, want %q", got, tt.wantEvents)
			}
			if got := breakerList(e); got != tt.wantLeft {
				t.Errorf("breakers left %q, want %q", got, tt.wantLeft)
			}

			events = nil
			e.ClusterJoined(tt.forget)
			back := Request{Verb: "get", Cluster: tt.forget}
			if d := e.Decide(back); d.Kind != Allow {
				t.Fatalf("Decide for %s after it came back = %+v, want allow from closed breakers", tt.forget, d)
			}
			if got := strings.Join(events, " "); got != "" {
				t.Errorf("observer heard %q as %s came back, want nothing", got, tt.forget)
			}
		})
	}
}

// A request routed to a cluster before it left, and judged after ForgetCluster, is judged by breakers kept nowhere:
// they are neither listed nor told to the observer, so that nothing of the departed cluster is kept for good. Once
// the cluster joins again its breakers are kept, and start closed.
func TestForgottenClusterKeepsNoBreakerUntilItJoins(t *testing.T) {
	var events []string
	e, err := New(Policy{Breakers: []BreakerRule{{Name: "a", ConsecutiveFailures: 1, OpenTimeout: time.Hour}}}, Options{Observer: ObserverFuncs{
		BreakerChangedFunc: func(rule, cluster string, from, to BreakerState) {
			events = append(events, rule+"/"+cluster+":"+from.String()+"->"+to.String())
		},
		BreakerRemovedFunc: func(rule, cluster string) { events = append(events, "removed "+rule+"/"+cluster) },
	}})
	if err != nil {
		t.Fatal(err)
	}
	member1 := Request{Verb: "get", Cluster: "member1"}
	e.Done(member1, e.Decide(member1), Outcome{Code: 200})
	e.ForgetCluster("member1")
	events = nil

	for range 2 { // routed before it left, judged after
		if d := e.Decide(member1); d.Kind != Allow {
			t.Fatalf("Decide for departed member1 = %+v, want allow", d)
		} else {
			e.Done(member1, d, Outcome{Code: 500})
		}
	}
	if got := breakerList(e); got != "" {
		t.Errorf("breakers after departed member1's requests %q, want none", got)
	}
	if got := strings.Join(events, " "); got != "" {
		t.Errorf("observer heard %q of departed member1, want nothing", got)
	}

	e.ClusterJoined("member1")
	e.Done(member1, e.Decide(member1), Outcome{Code: 500})
	if got := breakerList(e); got != "a/member1=open" {
		t.Errorf("breakers after member1 joined again and failed %q, want a/member1=open", got)
	}
	if got := strings.Join(events, " "); got != "a/member1:closed->open" {
		t.Errorf("observer heard %q after member1 joined again and failed, want a/member1:closed->open", got)
	}
}

// breakerList prints Engine.Breakers by cluster, then rule: "rule/cluster=state ...".
func breakerList(e *Engine) string {
	statuses := e.Breakers()
	slices.SortStableFunc(statuses, func(a, b BreakerStatus) int { return cmp.Compare(a.Cluster, b.Cluster) })
	var out []string
	for _, s := range statuses {
		out = append(out, s.Rule+"/"+s.Cluster+"="+s.State.String())
	}
	return strings.Join(out, " ")
}
