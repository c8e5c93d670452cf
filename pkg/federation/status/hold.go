package status

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// holds remember, for each binding whose status is held back for its clusters to report, when the last of them
// reported and how many were left then. Members apply and observe a binding's Works one after another; writing
// what each adds would restate the binding (and its template) once per cluster, so a binding waits while its
// clusters keep reporting. A cluster silent for the limit since the one before ends the wait: the limit bounds
// each gap, not the whole, because under load the clusters' reports are spread by the federator's own queues
// more than by any one cluster. The whole is still bounded: at most one limit per cluster.
type holds struct {
	mu   sync.Mutex
	held map[types.NamespacedName]hold
}

type hold struct {
	// last is when the hold began or a cluster last reported; left is how many clusters had yet to then.
	last time.Time
	left int
}

// wait is how much longer key's status may be held at now, while awaiting clusters have yet to report: what is
// left of limit since the hold began or the count of awaiting clusters last fell below what it was (progress);
// 0 (write now) when none is awaited, with no limit, or once limit has passed. Returning 0 ends the hold.
func (h *holds) wait(key types.NamespacedName, awaiting int, now time.Time, limit time.Duration) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if awaiting > 0 && limit > 0 {
		if h.held == nil {
			h.held = map[types.NamespacedName]hold{}
		}
		cur, held := h.held[key]
		// Only a count lower than any before is progress: one that rises and falls again does not extend it.
		if !held || awaiting < cur.left {
			cur = hold{last: now, left: awaiting}
		}
		if left := cur.last.Add(limit).Sub(now); left > 0 {
			h.held[key] = cur
			return left
		}
	}
	delete(h.held, key)
	return 0
}

// forget ends key's hold, if any (its binding is gone).
func (h *holds) forget(key types.NamespacedName) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.held, key)
}
