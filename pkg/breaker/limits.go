package breaker

import (
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// bucket is a RateLimitRule with its token bucket. The limiter is shared by every engine generation in which the
// rule's name lives on, so a config push does not refill a drained bucket.
type bucket struct {
	rule    RateLimitRule
	limiter *rate.Limiter
}

func newBucket(r RateLimitRule, prev *bucket, now time.Time) bucket {
	if prev == nil {
		return bucket{rule: r, limiter: rate.NewLimiter(rate.Limit(r.QPS), r.burst())}
	}
	if prev.rule.QPS != r.QPS {
		prev.limiter.SetLimitAt(now, rate.Limit(r.QPS))
	}
	if prev.rule.burst() != r.burst() {
		prev.limiter.SetBurstAt(now, r.burst())
	}
	return bucket{rule: r, limiter: prev.limiter}
}

// reservation is one token taken at decision time; cancel gives it back if a later check refuses the request, or
// if the request is never sent.
type reservation struct {
	res *rate.Reservation
	at  time.Time
}

// reserveTokens takes one token from every matching bucket. It returns the longest wait, its rule and the tokens
// taken, or, when some bucket's wait exceeds its MaxWait, a 429 decision with Retry-After set to that wait (all
// tokens given back).
func reserveTokens(buckets []bucket, r Request, now time.Time) (time.Duration, string, []reservation, *Decision) {
	var taken []reservation
	var wait time.Duration
	var waitRule string
	for _, b := range buckets {
		if !b.rule.Match.Matches(r) {
			continue
		}
		res := b.limiter.ReserveN(now, 1)
		delay := res.DelayFrom(now)
		if !res.OK() || delay > b.rule.MaxWait {
			res.CancelAt(now)
			for _, t := range taken {
				t.res.CancelAt(t.at)
			}
			d := reject(429, ReasonTooManyRequests, CauseRateLimit, b.rule.Name, delay,
				fmt.Sprintf("rate limit %q (%g/s) exceeded", b.rule.Name, b.rule.QPS))
			return 0, "", nil, &d
		}
		taken = append(taken, reservation{res: res, at: now})
		if delay > wait {
			wait, waitRule = delay, b.rule.Name
		}
	}
	return wait, waitRule, taken, nil
}

// inFlightCap is an InFlightRule with its counter; like bucket's limiter, the counter outlives rule changes so
// requests admitted under the old cap still release their slots.
type inFlightCap struct {
	rule  InFlightRule
	count *atomic.Int64
}

func newInFlightCap(r InFlightRule, prev *inFlightCap) inFlightCap {
	if prev == nil {
		return inFlightCap{rule: r, count: new(atomic.Int64)}
	}
	return inFlightCap{rule: r, count: prev.count}
}

// acquire takes a slot unless the cap is reached.
func (c inFlightCap) acquire() bool {
	for {
		n := c.count.Load()
		if n >= int64(c.rule.Max) {
			return false
		}
		if c.count.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func reject(code int, reason string, cause Cause, rule string, retryAfter time.Duration, message string) Decision {
	return Decision{Kind: Reject, Code: code, Reason: reason, Message: message, RetryAfter: retryAfter,
		Cause: cause, Rule: rule}
}
