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
}

// held reports whether the ownership may be used.
func (l *ownershipLease) held() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.expired
}

// Contact tells the proxy whether it is in contact with the manager (the xDS client's OnContact). Out of contact
// for the lease's duration, the proxy owns nothing until contact returns. Each change ends the watches, so
// operators relist under what the proxy now owns.
func (p *Proxy) Contact(inContact bool) {
	l := &p.lease
	if l.duration == 0 {
		return
	}
	l.mu.Lock()
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	if !inContact {
		l.timer = time.AfterFunc(l.duration, p.leaseExpired)
		l.mu.Unlock()
		return
	}
	was := l.expired
	l.expired = false
	l.mu.Unlock()
	if was {
		p.log.Info("in contact with the manager again; ownership restored")
		p.watches.endAll()
	}
}

func (p *Proxy) leaseExpired() {
	p.lease.mu.Lock()
	p.lease.expired = true
	p.lease.mu.Unlock()
	p.log.Info("no contact with the manager for the ownership lease; owning nothing until it returns", "lease", p.lease.duration)
	p.writeGate.Lock()
	p.writeGate.Unlock() //nolint:staticcheck // waiting for the writes begun under the lease is the point
	if n := p.watches.endAll(); n > 0 {
		p.metrics.endedWatches.Add(float64(n))
	}
}

// ownership is what the proxy enforces now: the store's, unless the lease has lapsed.
func (p *Proxy) ownership() *config.Ownership {
	if !p.lease.held() {
		return nil
	}
	return p.store.Current().Ownership
}
