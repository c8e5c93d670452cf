package xds

import "time"

// ended is how a stream ended, as far as the wait before the next attempt is concerned.
type ended int

const (
	// failed: no response came (the manager unreachable, the handshake or the token refused, the stream cut).
	failed ended = iota
	// served: the stream delivered a response before it ended: the manager was there.
	served
	// refusedByStandby: a manager replica that is not the leader refused the stream (IsNotLeader).
	refusedByStandby
)

// standbyRetry is about how soon a client tries again after a standby's refusal while that can still save the
// proxy's ownership: the Service reaches the managers and one of them is about to lead, which a wait grown over a
// failover would learn too late (see ClientOptions.ContactLease).
const standbyRetry = time.Second

// backoff is a bounded exponential backoff with jitter: after a failure the wait is drawn from [d/2, d), d doubling
// from min up to max; a served stream starts again from min. A value, so that next is pure.
type backoff struct {
	min, max, cur time.Duration
	// lease is the ContactLease (0: none); served is when the last stream that delivered a response ended.
	lease  time.Duration
	served time.Time
}

func newBackoff(minWait, maxWait, lease time.Duration) backoff {
	return backoff{min: minWait, max: maxWait, cur: minWait, lease: lease}
}

// next is the wait before the attempt after one that ended as e at now, with r (in [0, 1)) as its jitter, and the
// backoff after it. A standby's refusal within lease of the last served stream waits about standbyRetry (within min
// and max) and leaves d as it was: a leader is due, and finding it soon keeps the ownership; failures around it (the
// old leader's address still dialled) keep their pace. Past that (or with no lease, or never served) there is no
// ownership left to save and a refusal is a failure like another: replicas that stay standbys (no leader can be
// elected) are not dialled about once a second by every proxy for as long as that lasts.
func (b backoff) next(e ended, r float64, now time.Time) (time.Duration, backoff) {
	switch e {
	case refusedByStandby:
		if b.lease > 0 && !b.served.IsZero() && now.Sub(b.served) < b.lease {
			return jitter(min(max(standbyRetry, b.min), b.max), r), b
		}
	case served:
		b.cur, b.served = b.min, now
	}
	d := b.cur
	b.cur = min(2*b.cur, b.max)
	return jitter(d, r), b
}

// jitter draws a wait from [d/2, d) with r in [0, 1).
func jitter(d time.Duration, r float64) time.Duration {
	return d/2 + time.Duration(r*float64(d/2))
}
