package rerun

import (
	"sync"

	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
)

// Notifier hands each change of a users' layer to every subscriber. The layers' reconcilers notify it after the
// new set is swapped in, so a stage re-run by it interprets with the new set. It is safe for concurrent use; the
// zero value has no subscribers.
type Notifier struct {
	mu   sync.Mutex
	next int
	subs map[int]func(interpreter.Affected)
}

// Subscribe makes fn called with each change from now on, until the returned function is called. fn must not
// block: it is called from the layer's reconciler.
func (n *Notifier) Subscribe(fn func(interpreter.Affected)) (cancel func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.subs == nil {
		n.subs = map[int]func(interpreter.Affected){}
	}
	id := n.next
	n.next++
	n.subs[id] = fn
	return func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		delete(n.subs, id)
	}
}

// Notify tells every subscriber of a; an empty a tells nobody.
func (n *Notifier) Notify(a interpreter.Affected) {
	if a.Empty() {
		return
	}
	n.mu.Lock()
	subs := make([]func(interpreter.Affected), 0, len(n.subs))
	for _, fn := range n.subs {
		subs = append(subs, fn)
	}
	n.mu.Unlock()
	for _, fn := range subs {
		fn(a)
	}
}
