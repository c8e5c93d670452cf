package xds

import "time"

// backoff is a bounded exponential backoff with jitter: each wait is drawn from [d/2, d), d doubling from min up to
// max; reset returns to min. rand is an input (a float in [0, 1)) so tests can pin it.
type backoff struct {
	min, max, cur time.Duration
	rand          func() float64
}

func newBackoff(minWait, maxWait time.Duration, rand func() float64) *backoff {
	return &backoff{min: minWait, max: maxWait, cur: minWait, rand: rand}
}

func (b *backoff) next() time.Duration {
	d := b.cur
	b.cur = min(2*b.cur, b.max)
	return d/2 + time.Duration(b.rand()*float64(d/2))
}

func (b *backoff) reset() { b.cur = b.min }
