package status

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// holds remember since when each binding's status has been held back for its clusters to report. Members apply
// and observe a binding's Works one after another; writing what each adds would restate the binding (and its
// template) once per cluster, so a binding waits, up to a limit, until all have reported.
type holds struct {
	mu    sync.Mutex
	since map[types.NamespacedName]time.Time
}

// wait is how much longer key's status may be held at now: while waiting, what is left of limit since its hold
// began (which this call begins when it had none); otherwise, or once limit has passed, 0: write now. Returning
// 0 ends the hold.
func (h *holds) wait(key types.NamespacedName, waiting bool, now time.Time, limit time.Duration) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if waiting && limit > 0 {
		if h.since == nil {
			h.since = map[types.NamespacedName]time.Time{}
		}
		began, held := h.since[key]
		if !held {
			h.since[key], began = now, now
		}
		if left := began.Add(limit).Sub(now); left > 0 {
			return left
		}
	}
	delete(h.since, key)
	return 0
}

// forget ends key's hold, if any (its binding is gone).
func (h *holds) forget(key types.NamespacedName) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.since, key)
}
