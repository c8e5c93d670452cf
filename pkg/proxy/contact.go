package proxy

import (
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
		l.timer = time.AfterFunc(l.duration, func() { p.leaseExpired(contacts) })
		l.mu.Unlock()
		return
	}
	was := l.expired
	l.expired = false
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
