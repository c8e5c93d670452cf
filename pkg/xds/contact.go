package xds

import (
	"sync"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// contact is one stream's contact with the manager, for OnContact: gained with the first ownership document the
// proxy accepts (or refuses while it holds one it accepted before, see Client.holds), lost as soon as the stream
// ends, even while the proxy is still applying a response (waiting for its writes, say). The manager counts a
// proxy's lease from the end of the stream, so the proxy must too.
type contact struct {
	on func(inContact bool) // nil: nobody to tell

	mu    sync.Mutex // held while on runs, so that it hears true and false in order, each at most once
	in    bool
	ended bool
}

// gain reports contact, unless the stream has ended meanwhile.
func (c *contact) gain() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.on == nil || c.in || c.ended {
		return
	}
	c.in = true
	c.on(true)
}

// lose ends the contact for good: the stream is over.
func (c *contact) lose() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ended = true
	if c.in {
		c.in = false
		c.on(false)
	}
}

// received is one result of a stream's Recv.
type received struct {
	resp *discovery.DiscoveryResponse
	err  error
}

// inbox keeps a stream's responses, in order, for the session to handle one at a time, while Recv goes on: so
// the end of the stream is noticed when it happens, not when the session is done applying what came before.
type inbox struct {
	mu     sync.Mutex
	items  []received
	signal chan struct{}
}

// receive reads stream until it ends, losing c's contact then, and returns the responses, the last one being the
// error that ended it.
func receive(stream interface {
	Recv() (*discovery.DiscoveryResponse, error)
}, c *contact) *inbox {
	in := &inbox{signal: make(chan struct{}, 1)}
	go func() {
		for {
			resp, err := stream.Recv()
			if err != nil {
				c.lose()
			}
			in.push(received{resp, err})
			if err != nil {
				return
			}
		}
	}()
	return in
}

func (in *inbox) push(r received) {
	in.mu.Lock()
	in.items = append(in.items, r)
	in.mu.Unlock()
	select {
	case in.signal <- struct{}{}:
	default:
	}
}

// next waits for the oldest response not handled yet. It always comes: the stream ends with an error at the
// latest when its context does.
func (in *inbox) next() received {
	for {
		in.mu.Lock()
		if len(in.items) > 0 {
			r := in.items[0]
			in.items = in.items[1:]
			in.mu.Unlock()
			return r
		}
		in.mu.Unlock()
		<-in.signal
	}
}
