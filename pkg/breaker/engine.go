package breaker

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
)

// Options configures an Engine; zero fields get defaults.
type Options struct {
	// Clock drives rate limits; default wall time. (Breaker open timeouts always run on wall time: see circuit.)
	Clock Clock
	// Rand returns numbers in [0, 1) for fault percentages; default math/rand/v2. Called concurrently.
	Rand func() float64
	// Observer is told about rejections, delays and breaker changes; default none.
	Observer Observer
}

func (o *Options) setDefaults() {
	if o.Clock == nil {
		o.Clock = wallClock{}
	}
	if o.Rand == nil {
		o.Rand = rand.Float64
	}
	if o.Observer == nil {
		o.Observer = ObserverFuncs{}
	}
}

// Engine decides what happens to each request under a Policy. It is safe for concurrent use; Update swaps the
// policy without disturbing requests in flight.
type Engine struct {
	opts     Options
	updates  sync.Mutex // serializes Update, ForgetCluster and ClusterJoined
	rules    atomic.Pointer[compiled]
	departed departedClusters
}

// compiled is one policy generation with the state its rules carry.
type compiled struct {
	policy     Policy
	breakers   []*circuit
	inFlight   []inFlightCap
	rateLimits []bucket
}

// New returns an Engine for p, or Validate's error.
func New(p Policy, opts Options) (*Engine, error) {
	opts.setDefaults()
	e := &Engine{opts: opts}
	if err := e.Update(p); err != nil {
		return nil, err
	}
	return e, nil
}

// Update validates p and makes it current. On error the current policy stays. Rules whose name (and, for
// breakers, settings) are unchanged keep their state: an open breaker stays open, a drained bucket stays drained.
// A breaker rule with changed settings starts closed, and the Observer is told so; one dropped is told removed.
func (e *Engine) Update(p Policy) error {
	if err := Validate(p); err != nil {
		return fmt.Errorf("invalid traffic policy: %w", err)
	}
	e.updates.Lock()
	defer e.updates.Unlock()
	prev := e.rules.Load()
	if prev == nil {
		prev = &compiled{}
	}
	now := e.opts.Clock.Now()
	next := &compiled{policy: p}
	for _, r := range p.Breakers {
		old := findByName(prev.breakers, r.Name, func(c *circuit) string { return c.rule.Name })
		next.breakers = append(next.breakers, newCircuit(r, deref(old), e.opts.Observer, &e.departed))
	}
	// Before the new policy is seen, so the observer hears of no breaker of a new rule before the old one's end.
	for _, old := range prev.breakers {
		if slices.Contains(next.breakers, old) {
			continue
		}
		replaced := findByName(p.Breakers, old.rule.Name, func(r BreakerRule) string { return r.Name }) != nil
		old.retire(replaced)
	}
	for _, r := range p.InFlight {
		next.inFlight = append(next.inFlight, newInFlightCap(r,
			findByName(prev.inFlight, r.Name, func(c inFlightCap) string { return c.rule.Name })))
	}
	for _, r := range p.RateLimits {
		next.rateLimits = append(next.rateLimits, newBucket(r,
			findByName(prev.rateLimits, r.Name, func(b bucket) string { return b.rule.Name }), now))
	}
	e.rules.Store(next)
	return nil
}

func findByName[T any](items []T, name string, nameOf func(T) string) *T {
	for i := range items {
		if nameOf(items[i]) == name {
			return &items[i]
		}
	}
	return nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// Policy returns the current policy.
func (e *Engine) Policy() Policy { return e.rules.Load().policy }

// ForgetCluster drops the breakers of an upstream cluster that left, in every rule, and tells the Observer each is
// removed: they would otherwise be kept, and reported, for good. Until ClusterJoined says it is back, its requests
// (routed to it before it left) are judged by breakers kept nowhere; then its breakers start closed.
func (e *Engine) ForgetCluster(cluster string) {
	e.updates.Lock() // so that no rule is retired meanwhile, and the observer hears of each breaker's end once
	defer e.updates.Unlock()
	e.departed.set(cluster, true) // before the breakers go: one made after is kept nowhere
	for _, c := range e.rules.Load().breakers {
		c.forget(cluster)
	}
}

// ClusterJoined takes in that an upstream cluster is configured (again): a cluster ForgetCluster dropped keeps
// breakers once more. Cheap for a cluster that never left.
func (e *Engine) ClusterJoined(cluster string) {
	if !e.departed.has(cluster) {
		return
	}
	e.updates.Lock()
	defer e.updates.Unlock()
	e.departed.set(cluster, false)
}

// Breakers lists every breaker created so far (one per rule and cluster that saw traffic) and not forgotten, sorted.
func (e *Engine) Breakers() []BreakerStatus {
	var out []BreakerStatus
	for _, c := range e.rules.Load().breakers {
		out = append(out, c.statuses()...)
	}
	slices.SortFunc(out, func(a, b BreakerStatus) int {
		return cmp.Or(cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.Cluster, b.Cluster))
	})
	return out
}
