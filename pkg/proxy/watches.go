package proxy

import (
	"io"
	"sync"

	"github.com/fedmesh/fedmesh/pkg/proxy/config"
)

// watches holds the open watches, each with its served key and whether an ownership leaves what it shows unchanged,
// so that an ownership change can end those it changes. Each ends with an ERROR event carrying 410 Expired, which makes a
// client-go reflector relist under the new ownership instead of resuming from its last resourceVersion.
type watches struct {
	mu     sync.Mutex
	active map[*relistingBody]trackedWatch
}

type trackedWatch struct {
	key        servedKey
	unchanged  func(*config.Ownership) bool
	namespaced bool // the scope its resource was served under
}

func newWatches() *watches {
	return &watches{active: map[*relistingBody]trackedWatch{}}
}

// track relays the events next yields from a watch response body, until the body ends, endStale finds the watch
// changed (unchanged says no) or endRescoped finds its resource in the other scope than namespaced.
func (w *watches) track(body io.ReadCloser, next nextEvent, expired []byte, key servedKey, unchanged func(*config.Ownership) bool, namespaced bool) *relistingBody {
	b := &relistingBody{upstream: body, next: next, expired: expired, ended: make(chan struct{}), registry: w}
	w.mu.Lock()
	w.active[b] = trackedWatch{key: key, unchanged: unchanged, namespaced: namespaced}
	w.mu.Unlock()
	return b
}

// endStale ends every watch that cur (nil: owning nothing) changes, and returns how many it ended. Before it ends
// them, it calls taking with their served keys: what their clients do on the ERROR event (list again at once)
// comes after that. A watch ended already (on an earlier change, as it was answered, or refused with 410) is left
// out: its client has been told, and its key was taken in when it was ended (relistFence remembers it until it
// has relisted); a refusal serves no key.
func (w *watches) endStale(cur *config.Ownership, taking func(stale []servedKey)) int {
	w.mu.Lock()
	var stale []*relistingBody
	var keys []servedKey
	for b, t := range w.active {
		if b.isEnded() || t.unchanged(cur) {
			continue
		}
		stale = append(stale, b)
		if t.key != (servedKey{}) {
			keys = append(keys, t.key)
		}
	}
	w.mu.Unlock()
	taking(keys)
	for _, b := range stale {
		b.end()
	}
	return len(stale)
}

// endRescoped ends every watch of group's resources on cluster that changed (resource -> namespaced now) shows in
// the other scope, as endStale ends those an ownership changes: what it relayed was narrowed by the old scope (a
// namespaced resource's objects relayed whole as if cluster-scoped, or the reverse). ended is told the served key of
// each before it is ended, and it returns how many it ended.
func (w *watches) endRescoped(cluster, group string, changed map[string]bool, ended func(servedKey)) int {
	w.mu.Lock()
	stale := map[*relistingBody]servedKey{}
	for b, t := range w.active {
		namespaced, found := changed[t.key.resource.Resource]
		// A watch in a namespace took no scope from discovery: the API server serves it only for a namespaced one.
		if b.isEnded() || t.key.cluster != cluster || t.key.resource.Group != group || t.key.namespace != "" || !found || namespaced == t.namespaced {
			continue
		}
		stale[b] = t.key
	}
	w.mu.Unlock()
	for b, key := range stale {
		ended(key)
		b.end()
	}
	return len(stale)
}

func (w *watches) remove(b *relistingBody) {
	w.mu.Lock()
	delete(w.active, b)
	w.mu.Unlock()
}

// nextEvent is the next whole event of a watch to relay, valid until the following call. Without wait it returns
// only an event already read from upstream, or nil.
type nextEvent func(wait bool) ([]byte, error)

// relistingBody relays a watch stream whole event by whole event until end is called; then it stops reading
// upstream and yields one encoded 410 ERROR event before the stream ends. An event is never cut: the ERROR event
// follows the last whole one.
type relistingBody struct {
	upstream io.ReadCloser
	next     nextEvent
	pending  []byte // what is left of the event being relayed
	expired  []byte // the encoded ERROR event, in the stream's own framing
	registry *watches

	once  sync.Once
	ended chan struct{}
}

func (b *relistingBody) end() {
	b.once.Do(func() {
		close(b.ended)
		b.upstream.Close() // unblocks a next() waiting on the upstream
	})
}

func (b *relistingBody) isEnded() bool {
	select {
	case <-b.ended:
		return true
	default:
		return false
	}
}

// Read waits for the next event, then adds those already read from upstream behind it, as many as fit: the
// ReverseProxy flushes after every Read, so a lone event goes out at once and a burst in few writes, as the API
// server itself writes a burst.
func (b *relistingBody) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(b.pending) == 0 {
			if b.isEnded() {
				if len(b.expired) == 0 {
					break
				}
				b.pending, b.expired = b.expired, nil
			} else {
				event, err := b.next(n == 0)
				switch {
				case b.isEnded():
					continue // ended while reading: that event stays upstream, the ERROR event follows
				case err != nil && n > 0:
					return n, nil // what is in hand first; the reader gives the error again
				case err != nil:
					return 0, err
				case event == nil:
					return n, nil // no more without waiting
				}
				b.pending = event
			}
		}
		m := copy(p[n:], b.pending)
		b.pending = b.pending[m:]
		n += m
	}
	if n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

func (b *relistingBody) Close() error {
	b.registry.remove(b)
	b.end()
	return nil
}
