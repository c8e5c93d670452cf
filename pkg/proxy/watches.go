package proxy

import (
	"io"
	"sync"
)

// watches holds the watches whose visible objects depend on the shard's ownership, so that an ownership change
// can end them. Each ends with an ERROR event carrying 410 Expired, which makes a client-go reflector relist
// under the new ranges instead of resuming from its last resourceVersion.
type watches struct {
	mu     sync.Mutex
	active map[*relistingBody]struct{}
}

func newWatches() *watches { return &watches{active: map[*relistingBody]struct{}{}} }

// track relays the events next yields from a watch response body, until the body ends or endAll.
func (w *watches) track(body io.ReadCloser, next func() ([]byte, error), expired []byte) *relistingBody {
	b := &relistingBody{upstream: body, next: next, expired: expired, ended: make(chan struct{}), registry: w}
	w.mu.Lock()
	w.active[b] = struct{}{}
	w.mu.Unlock()
	return b
}

// endAll ends every tracked watch, and returns how many it ended.
func (w *watches) endAll() int {
	w.mu.Lock()
	bodies := make([]*relistingBody, 0, len(w.active))
	for b := range w.active {
		bodies = append(bodies, b)
	}
	w.mu.Unlock()
	for _, b := range bodies {
		b.end()
	}
	return len(bodies)
}

func (w *watches) remove(b *relistingBody) {
	w.mu.Lock()
	delete(w.active, b)
	w.mu.Unlock()
}

// relistingBody relays a watch stream whole event by whole event until end is called; then it stops reading
// upstream and yields one encoded 410 ERROR event before the stream ends. An event is never cut: the ERROR event
// follows the last whole one.
type relistingBody struct {
	upstream io.ReadCloser
	next     func() ([]byte, error) // the next whole event to relay, valid until the following call
	pending  []byte                 // what is left of the event being relayed
	expired  []byte                 // the encoded ERROR event, in the stream's own framing
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

// Read returns at most one event per call, so the ReverseProxy flushes each event as soon as it is read.
func (b *relistingBody) Read(p []byte) (int, error) {
	if len(b.pending) == 0 && !b.isEnded() {
		event, err := b.next()
		if !b.isEnded() {
			if err != nil {
				return 0, err
			}
			b.pending = event
		}
	}
	if len(b.pending) == 0 {
		if len(b.expired) == 0 {
			return 0, io.EOF
		}
		b.pending, b.expired = b.expired, nil
	}
	n := copy(p, b.pending)
	b.pending = b.pending[n:]
	return n, nil
}

func (b *relistingBody) Close() error {
	b.registry.remove(b)
	b.end()
	return nil
}
