package breaker

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker/v2"
)

// BreakerState is a circuit breaker's state; its values are the usual gauge encoding (0 closed, 1 half-open, 2 open).
type BreakerState int

const (
	BreakerClosed   BreakerState = BreakerState(gobreaker.StateClosed)
	BreakerHalfOpen BreakerState = BreakerState(gobreaker.StateHalfOpen)
	BreakerOpen     BreakerState = BreakerState(gobreaker.StateOpen)
)

func (s BreakerState) String() string { return gobreaker.State(s).String() }

// BreakerStatus is one (rule, cluster) breaker as Engine.Breakers reports it.
type BreakerStatus struct {
	Rule    string
	Cluster string
	State   BreakerState
}

// Results handed to gobreaker's done callback.
var (
	errFailed   = errors.New("upstream failed")
	errExcluded = errors.New("not judged") // caller went away, or a later check refused the request
)

// circuit is a BreakerRule with its breakers, one per upstream cluster, created on a cluster's first request.
//
// gobreaker v2.4.0 reads time.Now itself and has no clock hook, so a breaker's open timeout runs on wall time; the
// open time kept here for Retry-After uses wall time too, to agree with it.
type circuit struct {
	rule     BreakerRule // defaults applied
	observer Observer

	mu        sync.Mutex
	byCluster map[string]*clusterBreaker
	departed  *departedClusters // the engine's: no breaker is kept for them
	// retired is set once a policy update replaced or dropped the rule: requests admitted before may still report
	// to its breakers, but their changes are no longer the observer's business.
	retired atomic.Bool
}

type clusterBreaker struct {
	cb       *gobreaker.TwoStepCircuitBreaker[struct{}]
	openedAt atomic.Int64 // wall-clock UnixNano of the last transition to open
	// changes counts state changes, each of which starts gobreaker's counts afresh (a new generation).
	changes atomic.Uint64
	// forgotten is set once its cluster left (circuit.forget): like retired, for this breaker alone.
	forgotten atomic.Bool
}

// newCircuit returns prev when the rule is unchanged, so a config push keeps open breakers open.
func newCircuit(r BreakerRule, prev *circuit, observer Observer, departed *departedClusters) *circuit {
	r = r.withDefaults()
	if prev != nil && reflect.DeepEqual(prev.rule, r) {
		return prev
	}
	return &circuit{rule: r, observer: observer, byCluster: map[string]*clusterBreaker{}, departed: departed}
}

// forCluster is cluster's breaker, made on its first request. A departed cluster's request (one routed to it before
// it left) gets a breaker of its own, kept nowhere and unheard: a breaker kept for it would never be forgotten.
func (c *circuit) forCluster(cluster string) *clusterBreaker {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b, ok := c.byCluster[cluster]; ok {
		return b
	}
	b := &clusterBreaker{}
	departed := c.departed.has(cluster)
	b.forgotten.Store(departed)
	r := c.rule
	bucketPeriod := r.Interval / rolloverBucketCount
	b.cb = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:         r.Name + "/" + cluster,
		MaxRequests:  r.HalfOpenRequests,
		Interval:     r.Interval,
		BucketPeriod: bucketPeriod,
		Timeout:      r.OpenTimeout,
		ReadyToTrip:  r.readyToTrip,
		IsExcluded:   func(err error) bool { return errors.Is(err, errExcluded) },
		// Called under the gobreaker's lock, on the request that notices the change: the open-to-half-open
		// transition is seen only when the next request arrives.
		OnStateChange: func(_ string, from, to gobreaker.State) {
			b.changes.Add(1)
			if to == gobreaker.StateOpen {
				b.openedAt.Store(time.Now().UnixNano())
			}
			if !c.retired.Load() && !b.forgotten.Load() {
				c.observer.BreakerChanged(r.Name, cluster, BreakerState(from), BreakerState(to))
			}
		},
	})
	if !departed {
		c.byCluster[cluster] = b
	}
	return b
}

func (r BreakerRule) readyToTrip(counts gobreaker.Counts) bool {
	if r.ConsecutiveFailures > 0 && counts.ConsecutiveFailures >= r.ConsecutiveFailures {
		return true
	}
	completed := counts.TotalSuccesses + counts.TotalFailures
	return r.FailureRatio > 0 && completed >= r.MinRequests &&
		float64(counts.TotalFailures) >= r.FailureRatio*float64(completed)
}

// allow asks the cluster's breaker to let a request through. It returns the probe to report the outcome to, or a
// 503 decision: Retry-After is the rest of the open timeout, or 1s when half-open probes are all taken.
func (c *circuit) allow(cluster string) (probe, *Decision) {
	b := c.forCluster(cluster)
	// Read before Allow: a change in between only makes the probe report the way gobreaker would.
	changes := b.changes.Load()
	report, err := b.cb.Allow()
	if err == nil {
		return probe{breaker: b, report: report, changes: changes, latencyThreshold: c.rule.LatencyThreshold}, nil
	}
	retryAfter := time.Second
	state := "half-open and probing"
	if errors.Is(err, gobreaker.ErrOpenState) {
		state = "open"
		opened := time.Unix(0, b.openedAt.Load())
		retryAfter = max(time.Until(opened.Add(c.rule.OpenTimeout)), time.Nanosecond)
	}
	d := reject(503, ReasonServiceUnavailable, CauseBreaker, c.rule.Name, retryAfter,
		fmt.Sprintf("upstream cluster %q is failing: circuit breaker %q is %s", cluster, c.rule.Name, state))
	return probe{}, &d
}

// retire tells the observer that c's breakers are gone: restarted closed when replaced (a rule of the same name
// with other settings), removed otherwise. A change a breaker makes while it is read here is either told before
// (under the breaker's lock, which reading its state waits for) or not at all.
func (c *circuit) retire(replaced bool) {
	c.retired.Store(true)
	statuses := c.statuses()
	slices.SortFunc(statuses, func(a, b BreakerStatus) int { return cmp.Compare(a.Cluster, b.Cluster) })
	for _, s := range statuses {
		switch {
		case !replaced:
			c.observer.BreakerRemoved(s.Rule, s.Cluster)
		case s.State != BreakerClosed:
			c.observer.BreakerChanged(s.Rule, s.Cluster, s.State, BreakerClosed)
		}
	}
}

// forget drops cluster's breaker and tells the observer it is removed, as retire does for a whole rule; a request
// admitted before may still report to it, unheard. Should the cluster come back (Engine.ClusterJoined), forCluster
// makes a new breaker.
func (c *circuit) forget(cluster string) {
	c.mu.Lock()
	b, ok := c.byCluster[cluster]
	delete(c.byCluster, cluster)
	c.mu.Unlock()
	if !ok {
		return
	}
	b.forgotten.Store(true)
	b.cb.State() // waits out a change being told under the breaker's lock, so that the removal is told after it
	if !c.retired.Load() {
		c.observer.BreakerRemoved(c.rule.Name, cluster)
	}
}

func (c *circuit) statuses() []BreakerStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]BreakerStatus, 0, len(c.byCluster))
	for cluster, b := range c.byCluster {
		out = append(out, BreakerStatus{Rule: c.rule.Name, Cluster: cluster, State: BreakerState(b.cb.State())})
	}
	return out
}

// probe is an admitted request's pending report to one breaker.
type probe struct {
	breaker *clusterBreaker
	report  func(error)
	// changes is breaker.changes when the request was admitted.
	changes          uint64
	latencyThreshold time.Duration
}

// finish counts the request's outcome when it ends. gobreaker's report files it in the bucket of the rolling window
// the request started in, and drops it once that bucket has left the window: every 504 kube-apiserver gives after
// its 60s request timeout would be lost with the default 60s interval. So while the breaker has stayed closed since
// the admission, that report only takes the request off the count (excluded), and the outcome goes through a fresh
// Allow, which a closed breaker always grants, into the current bucket. A half-open probe's outcome, or one of a
// breaker that changed state since (whose counts started afresh), goes the way gobreaker would take it.
func (p probe) finish(r Request, o Outcome) {
	result := o.judged(p.latencyThreshold, r.LongRunning)
	b := p.breaker
	if result == errExcluded || b.changes.Load() != p.changes || b.cb.State() != gobreaker.StateClosed {
		p.report(result)
		return
	}
	p.report(errExcluded)
	report, err := b.cb.Allow()
	if err != nil {
		return // opened meanwhile
	}
	if b.changes.Load() != p.changes {
		report(errExcluded) // changed meanwhile: the outcome is of counts gone, and must not take a probe's place
		return
	}
	report(result)
}

// departedClusters are the clusters Engine.ForgetCluster dropped, until they join again. Read only when a cluster's
// first request makes its breaker, without a lock: the set is replaced, never changed.
type departedClusters struct {
	names atomic.Pointer[map[string]bool]
}

func (d *departedClusters) has(cluster string) bool {
	names := d.names.Load()
	return names != nil && (*names)[cluster]
}

// set marks cluster departed or not; callers serialize (Engine.updates).
func (d *departedClusters) set(cluster string, departed bool) {
	if d.has(cluster) == departed {
		return
	}
	next := map[string]bool{}
	if names := d.names.Load(); names != nil {
		next = maps.Clone(*names)
	}
	if departed {
		next[cluster] = true
	} else {
		delete(next, cluster)
	}
	d.names.Store(&next)
}
