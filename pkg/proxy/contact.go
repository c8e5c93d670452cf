package proxy

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/fedmesh/fedmesh/pkg/proxy/config"
)

// ownershipLease makes a proxy that lost contact with the manager give up its ranges by itself after a while, so
// that the manager can hand them to another shard without waiting for a proxy it cannot reach. The manager waits
// the same lease (and a margin) before it counts such a proxy out.
type ownershipLease struct {
	duration time.Duration // 0: no lease (standalone configuration)

	mu      sync.Mutex
	expired bool
	ends    time.Time // out of contact: when the lease runs out; zero in contact
	timer   *time.Timer
	// contacts counts the calls of Contact: a timer that fires as contact returns, before it could be stopped,
	// finds a newer count and expires nothing.
	contacts uint64
}

// held reports whether the ownership may be used.
func (l *ownershipLease) held() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.expired
}

// Contact tells the proxy whether it is in contact with the manager (the xDS client's OnContact). Out of contact
// for the lease's duration, the proxy owns nothing until contact returns. Each change ends the watches it
// changes, so operators relist under what the proxy now owns.
func (p *Proxy) Contact(inContact bool) {
	l := &p.lease
	if l.duration == 0 {
		return
	}
	l.mu.Lock()
	l.contacts++
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	if !inContact {
		contacts := l.contacts
		l.ends = time.Now().Add(l.duration)
		l.timer = time.AfterFunc(l.duration, func() { p.leaseExpired(contacts) })
		l.mu.Unlock()
		return
	}
	was := l.expired
	l.expired = false
	l.ends = time.Time{}
	l.mu.Unlock()
	if was {
		p.log.Info("in contact with the manager again; ownership restored")
		p.settle()
	}
}

// leaseExpired gives up the ownership, unless Contact was called since the lease's timer was set (contacts).
func (p *Proxy) leaseExpired(contacts uint64) {
	p.lease.mu.Lock()
	if p.lease.contacts != contacts {
		p.lease.mu.Unlock()
		return
	}
	p.lease.expired = true
	p.lease.mu.Unlock()
	p.log.Info("no contact with the manager for the ownership lease; owning nothing until it returns", "lease", p.lease.duration)
	p.settle()
}

// ownership is what the proxy enforces now: the store's, unless the lease has lapsed.
func (p *Proxy) ownership() *config.Ownership {
	if !p.lease.held() {
		return nil
	}
	return p.store.Current().Ownership
}

// writeDeadline is the latest moment a write admitted at now may take effect, so that none lands after the lease
// could have run out (the manager counts a silent proxy out only after the lease, plus a margin for noticing the
// lost contact, and a write held up in a webhook or in API priority and fairness must not outlast that). In
// contact, a lease's length from now: contact may be lost at once, and the lease then runs from there. Out of
// contact, the lease's end. Zero without a lease: nothing to bound.
func writeDeadline(duration time.Duration, ends, now time.Time) time.Time {
	switch {
	case duration == 0:
		return time.Time{}
	case ends.IsZero():
		return now.Add(duration)
	default:
		return ends
	}
}

// boundWrite gives a write its deadline (writeDeadline): the API server is asked to give up by then (its timeout
// parameter, kept if the caller asked for less or for something the API server will refuse itself), and the proxy
// cancels the request then in any case. ok is false when less than a millisecond is left, the API server's
// smallest timeout (it reads 0 as none).
func (p *Proxy) boundWrite(r *http.Request) (bounded *http.Request, cancel context.CancelFunc, ok bool) {
	p.lease.mu.Lock()
	deadline := writeDeadline(p.lease.duration, p.lease.ends, time.Now())
	p.lease.mu.Unlock()
	if deadline.IsZero() {
		return r, func() {}, true
	}
	remaining := time.Until(deadline).Truncate(time.Millisecond)
	if remaining <= 0 {
		return nil, nil, false
	}
	ctx, cancel := context.WithDeadline(r.Context(), deadline)
	bounded = r.WithContext(ctx)
	u := *r.URL
	q := u.Query()
	if asked, err := time.ParseDuration(q.Get("timeout")); !q.Has("timeout") || err == nil && (asked <= 0 || asked > remaining) {
		q.Set("timeout", remaining.String())
		u.RawQuery = q.Encode()
	}
	bounded.URL = &u
	return bounded, cancel, true
}
