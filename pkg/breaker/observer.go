package breaker

import "time"

// Observer is told what the engine did, for metrics; the proxy wires Prometheus to it. Methods are called on the
// request's goroutine, BreakerChanged under that breaker's lock: they must be quick and must not call the Engine.
type Observer interface {
	// Rejected is called for every Reject decision; d.Cause and d.Rule say which rule refused.
	Rejected(r Request, d Decision)
	// Delayed is called for each part of a Delay decision: a rate-limit wait (CauseRateLimit, "throttled") or an
	// injected delay (CauseFault).
	Delayed(r Request, cause Cause, rule string, wait time.Duration)
	// BreakerChanged is called when the breaker of rule for cluster changes state, and with to closed when a
	// policy update restarts the rule with other settings.
	BreakerChanged(rule, cluster string, from, to BreakerState)
	// BreakerRemoved is called when a policy update drops the rule, for each breaker it had, and when
	// Engine.ForgetCluster drops the cluster, for each of its breakers.
	BreakerRemoved(rule, cluster string)
}

// ObserverFuncs adapts functions to Observer; nil fields are skipped, so ObserverFuncs{} observes nothing.
type ObserverFuncs struct {
	RejectedFunc       func(r Request, d Decision)
	DelayedFunc        func(r Request, cause Cause, rule string, wait time.Duration)
	BreakerChangedFunc func(rule, cluster string, from, to BreakerState)
	BreakerRemovedFunc func(rule, cluster string)
}

var _ Observer = ObserverFuncs{}

func (f ObserverFuncs) Rejected(r Request, d Decision) {
	if f.RejectedFunc != nil {
		f.RejectedFunc(r, d)
	}
}

func (f ObserverFuncs) Delayed(r Request, cause Cause, rule string, wait time.Duration) {
	if f.DelayedFunc != nil {
		f.DelayedFunc(r, cause, rule, wait)
	}
}

func (f ObserverFuncs) BreakerChanged(rule, cluster string, from, to BreakerState) {
	if f.BreakerChangedFunc != nil {
		f.BreakerChangedFunc(rule, cluster, from, to)
	}
}

func (f ObserverFuncs) BreakerRemoved(rule, cluster string) {
	if f.BreakerRemovedFunc != nil {
		f.BreakerRemovedFunc(rule, cluster)
	}
}
