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
//
// The limit follows the gaps seen: twice their running mean, never below the configured limit nor above
// maxHoldFactor times it. Under load the gaps grow past any fixed limit, every binding would then be written once
// per cluster, and those writes are more of the load that spreads the reports.
type holds struct {
	mu   sync.Mutex
	held map[types.NamespacedName]hold
	// gap is the running mean of the time between a binding's clusters reporting, each gap counted at most
	// maxHoldFactor limits.
	gap time.Duration
}

// maxHoldFactor bounds the learnt limit, in configured limits: a cluster that is down is known as such by its
// Ready condition; one slower than this is not worth holding the others' news for.
const maxHoldFactor = 5

// gapWeight is the weight of each new gap in the running mean: about the last 8 gaps count.
const gapWeight = 8

type hold struct {
	// since is when the running hold began (a first report, progress, or news after an ended hold); it ends at since
	// plus the limit. Zero once the limit has passed and the status was written with what had come.
	since time.Time
	// reported is when the hold began or a cluster last reported, kept past the hold's end so that a report after
	// it still counts its whole gap; left is how many clusters had yet to report then.
	reported time.Time
	left     int
}

// wait is how much longer key's status, which has news to write, may be held at now, while awaiting clusters
// have yet to report: what is left of the limit since the hold began or the count of awaiting clusters last fell
// below what it was (progress); 0 (write now) when none is awaited, with no limit, or once the limit has passed.
// A binding held again after its limit passed begins a new hold.
func (h *holds) wait(key types.NamespacedName, awaiting int, now time.Time, limit time.Duration) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if limit <= 0 {
		delete(h.held, key)
		return 0
	}
	cur, held := h.held[key]
	// Only a count lower than any before is progress: one that rises and falls again does not extend it.
	progress := held && awaiting < cur.left
	if progress {
		h.observe(now.Sub(cur.reported), limit)
	}
	if awaiting == 0 {
		delete(h.held, key)
		return 0
	}
	switch {
	case !held || progress:
		cur = hold{since: now, reported: now, left: awaiting}
	case cur.since.IsZero():
		cur.since = now
	}
	left := cur.since.Add(h.limit(limit)).Sub(now)
	if left <= 0 {
		cur.since = time.Time{}
	}
	if h.held == nil {
		h.held = map[types.NamespacedName]hold{}
	}
	h.held[key] = cur
	return max(left, 0)
}

// limit is the hold's limit learnt from the gaps seen, given the configured one.
func (h *holds) limit(configured time.Duration) time.Duration {
	return min(max(2*h.gap, configured), maxHoldFactor*configured)
}

// observe adds one gap between reports to the running mean.
func (h *holds) observe(gap, limit time.Duration) {
	gap = min(gap, maxHoldFactor*limit)
	h.gap += (gap - h.gap) / gapWeight
}

// learntLimit is the hold's limit now, given the configured one.
func (h *holds) learntLimit(configured time.Duration) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.limit(configured)
}

// forget ends key's hold, if any (its binding is gone, or has nothing to write).
func (h *holds) forget(key types.NamespacedName) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.held, key)
}
