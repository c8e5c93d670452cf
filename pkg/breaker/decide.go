package breaker

import (
	"fmt"
	"sync/atomic"
	"time"
)

// Decide returns what to do with r before it is forwarded. Every Decision must be passed to Done once the request
// ends (a Reject may be, harmlessly).
//
// Checks run in this order, each for a reason:
//  1. deny: static and cheapest; a denied request must not use anything or count anywhere.
//  2. fault abort: an injected failure never reaches the upstream, so it must not take breaker probes, slots or
//     tokens, nor be counted by a breaker as the upstream's failure.
//  3. breaker: when the upstream is failing, fail fast before taking a slot or a token.
//  4. in-flight cap: a slot is returned exactly, a token only approximately, so the exact check goes first and a
//     request refused here burns no token. The slot is also held during the rate-limit wait, so the cap bounds how
//     many requests can be queued waiting.
//  5. rate limit: the token is taken last among the refusals, once nothing else can refuse the request.
//  6. fault delay: it stands for upstream latency, so it applies only to requests that will be forwarded, on top
//     of any rate-limit wait.
func (e *Engine) Decide(r Request) Decision {
	now := e.opts.Clock.Now()
	c := e.rules.Load()
	p := c.policy

	for _, rule := range p.Deny {
		if rule.Match.Matches(r) {
			msg := rule.Message
			if msg == "" {
				msg = fmt.Sprintf("denied by traffic policy rule %q", rule.Name)
			}
			code := rule.Code
			if code == 0 {
				code = defaultDenyCode
			}
			return e.rejected(r, nil, reject(code, reasonFor(code), CauseDeny, rule.Name, 0, msg))
		}
	}

	var fault *FaultRule
	for i := range p.Faults {
		if p.Faults[i].Match.Matches(r) {
			fault = &p.Faults[i]
			break
		}
	}
	if fault != nil && e.roll(fault.AbortPercent) {
		return e.rejected(r, nil, reject(fault.AbortCode, reasonFor(fault.AbortCode), CauseFault, fault.Name, 0,
			fmt.Sprintf("fault injected by traffic policy rule %q", fault.Name)))
	}

	held := &admission{}
	for _, b := range c.breakers {
		if !b.rule.Match.Matches(r) {
			continue
		}
		pr, refused := b.allow(r.Cluster)
		if refused != nil {
			return e.rejected(r, held, *refused)
		}
		held.probes = append(held.probes, pr)
	}

	if !r.LongRunning {
		for _, cp := range c.inFlight {
			if !cp.rule.Match.Matches(r) {
				continue
			}
			if !cp.acquire() {
				return e.rejected(r, held, reject(429, ReasonTooManyRequests, CauseInFlight,
					cp.rule.Name, time.Second,
					fmt.Sprintf("too many requests in flight: cap %q (max %d) reached", cp.rule.Name, cp.rule.Max)))
			}
			held.slots = append(held.slots, cp.count)
		}
	}

	wait, waitRule, tokens, refused := reserveTokens(c.rateLimits, r, now)
	if refused != nil {
		return e.rejected(r, held, *refused)
	}
	held.tokens = tokens

	d := Decision{held: held}
	if wait > 0 {
		e.opts.Observer.Delayed(r, CauseRateLimit, waitRule, wait)
		d.Kind, d.Delay, d.Cause, d.Rule = Delay, wait, CauseRateLimit, waitRule
	}
	if fault != nil && e.roll(fault.DelayPercent) {
		e.opts.Observer.Delayed(r, CauseFault, fault.Name, fault.Delay)
		if fault.Delay > wait {
			d.Cause, d.Rule = CauseFault, fault.Name
		}
		d.Kind, d.Delay = Delay, d.Delay+fault.Delay
	}
	return d
}

// Done reports how a request decided by Decide ended: it frees the request's in-flight slots and tells its
// breakers whether the upstream succeeded. Calling it again for the same Decision does nothing.
func (e *Engine) Done(r Request, d Decision, o Outcome) {
	if d.held == nil || !d.held.finished.CompareAndSwap(false, true) {
		return
	}
	for _, s := range d.held.slots {
		s.Add(-1)
	}
	if o.Unsent {
		// The tokens it waited for go back, as far as later reservations allow (rate.Limiter.Wait does the same).
		now := e.opts.Clock.Now()
		for _, t := range d.held.tokens {
			t.res.CancelAt(now)
		}
	}
	for _, p := range d.held.probes {
		p.finish(r, o)
	}
}

// admission is what an admitted request holds until Done.
type admission struct {
	finished atomic.Bool
	probes   []probe
	slots    []*atomic.Int64
	tokens   []reservation
}

// rejected gives back what the request had taken so far, tells the observer, and returns d.
func (e *Engine) rejected(r Request, held *admission, d Decision) Decision {
	if held != nil {
		e.Done(r, Decision{held: held}, Outcome{Canceled: true})
	}
	e.opts.Observer.Rejected(r, d)
	return d
}

// roll reports whether a fault with the given percentage hits this request.
func (e *Engine) roll(percent float64) bool {
	return percent > 0 && e.opts.Rand()*100 < percent
}

// reasonFor maps a status code to its metav1.StatusReason spelling.
func reasonFor(code int) string {
	switch code {
	case 400:
		return "BadRequest"
	case 401:
		return "Unauthorized"
	case 403:
		return ReasonForbidden
	case 404:
		return "NotFound"
	case 409:
		return "Conflict"
	case 429:
		return ReasonTooManyRequests
	case 500:
		return "InternalError"
	case 503:
		return ReasonServiceUnavailable
	case 504:
		return "Timeout"
	}
	return ""
}
