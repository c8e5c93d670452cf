package filter

import (
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Verdict is what a Prober learned of whether an upstream filters a resource by shardSelector.
type Verdict uint8

const (
	// Unknown: no list response has shown yet whether the server filters.
	Unknown Verdict = iota
	// ServerFilters: a list response echoed the shardSelector in metadata.shardInfo, or a probe's list left out the
	// namespace it asked to leave out (Prober.CheckProbe).
	ServerFilters
	// ServerDoesNotFilter: a list response that carries shardInfo came back without the shardSelector echoed, or
	// one (or a watch asked with it) held an object the shardSelector does not select; the proxy filters.
	ServerDoesNotFilter
)

func (v Verdict) String() string {
	switch v {
	case ServerFilters:
		return "server filters"
	case ServerDoesNotFilter:
		return "server does not filter"
	}
	return "unknown"
}

// ProbeKey names what a Prober keeps a verdict for: a resource of one upstream (empty Cluster: the API server
// that the proxy fronts directly), since member clusters may run different versions or feature gates.
type ProbeKey struct {
	Cluster string
	schema.GroupResource
}

// Prober remembers, per ProbeKey, whether the upstream filters by shardSelector. It does no I/O: the plumbing
// shows it list responses (CheckList, CheckProbe) and asks which mode to use (Resolve). The zero Prober is ready
// to use and safe for concurrent use.
//
// The first evidence sets the verdict. A later list that shows the server did not filter turns ServerFilters into
// ServerDoesNotFilter (one API server of an HA set may be older, or have the gate off), but never the other way:
// once the proxy filters a resource itself, it keeps doing so until Forget (say, on a config change).
//
// A probe that told nothing (an empty collection shows no object to go by) is not repeated for each request: the
// plumbing notes it (Inconclusive) and asks again only once ProbeDue says so.
type Prober struct {
	mu       sync.Mutex
	verdicts map[ProbeKey]Verdict
	// retryAt is, per key still Unknown, when a probe that told nothing may be tried again.
	retryAt map[ProbeKey]time.Time
}

// ProbeDue reports whether a probe of key is worth sending at now: nothing is known of it, and no probe told
// nothing shortly before.
func (p *Prober) ProbeDue(key ProbeKey, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.verdicts[key] == Unknown && !now.Before(p.retryAt[key])
}

// Inconclusive notes that a probe of key told nothing (or failed), so that ProbeDue holds the next one off until
// retry.
func (p *Prober) Inconclusive(key ProbeKey, retry time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.retryAt == nil {
		p.retryAt = map[ProbeKey]time.Time{}
	}
	p.retryAt[key] = retry
}

// Verdict is what p knows of key.
func (p *Prober) Verdict(key ProbeKey) Verdict {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.verdicts[key]
}

// Record notes one list response for key, and returns the verdict now.
func (p *Prober) Record(key ProbeKey, serverFiltered bool) Verdict {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.verdicts == nil {
		p.verdicts = map[ProbeKey]Verdict{}
	}
	v := p.verdicts[key]
	switch {
	case !serverFiltered:
		v = ServerDoesNotFilter
	case v == Unknown:
		v = ServerFilters
	}
	p.verdicts[key] = v
	delete(p.retryAt, key)
	return v
}

// Forget drops what p knows of key, so that the next list probes again.
func (p *Prober) Forget(key ProbeKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.verdicts, key)
	delete(p.retryAt, key)
}

// Resolve is the mode to plan a request for key with when mode is configured: ModeAuto becomes ModeServer or
// ModeClient once the verdict is in (and stays ModeAuto, a probe, until then). ModeServer becomes ModeClient too
// when the server was seen not to filter, so that watches do not leak; ModeLabel and ModeClient stay.
func (p *Prober) Resolve(key ProbeKey, mode Mode) Mode {
	if mode != ModeAuto && mode != ModeServer {
		return mode
	}
	switch p.Verdict(key) {
	case ServerFilters:
		return ModeServer
	case ServerDoesNotFilter:
		return ModeClient
	}
	return mode
}

// CheckList looks at a list response to a request planned as plan, records what it shows for key, and says
// whether the proxy must filter this response itself. Without VerifyShardInfo that is plan.ClientFilter. With it,
// see CheckSummary.
func (p *Prober) CheckList(key ProbeKey, plan Plan, body []byte, contentType string) (clientFilter bool, err error) {
	if !plan.VerifyShardInfo {
		return plan.ClientFilter, nil
	}
	s, err := ReadListSummary(body, contentType)
	if err != nil {
		return true, err
	}
	return p.CheckSummary(key, plan, s), nil
}

// CheckSummary is CheckList for a list read already. A list that carries shardInfo must echo plan.ShardSelector
// there; if it does not, the server did not filter (or filtered by something else) and the proxy filters this very
// response, so that nothing leaks. A list that cannot carry it is judged by its entries: one outside the selected
// namespaces shows that the server did not filter. None outside shows nothing, and leaves the verdict as it was:
// the response passes unfiltered only when the server is known to filter and every entry told its namespace, else
// the proxy filters it. An entry that did not tell (a Table row without its object, an item of a protobuf list of
// unknown layout) may be another shard's whatever the verdict: one API server of an HA set may filter and the next
// not, so such a list never passes on the verdict alone.
func (p *Prober) CheckSummary(key ProbeKey, plan Plan, s ListSummary) (clientFilter bool) {
	if !plan.VerifyShardInfo {
		return plan.ClientFilter
	}
	if s.CarriesShardInfo() {
		return p.CheckShardInfo(key, plan, s.ShardInfo)
	}
	outside, err := s.outside(plan.ShardSelector)
	if err != nil {
		return true
	}
	if outside {
		p.Record(key, false)
		return true
	}
	return s.NamespacesUnknown || p.Verdict(key) != ServerFilters
}

// CheckShardInfo is CheckSummary for a list that carries shardInfo and whose metadata.shardInfo has been read
// already (see ReadListHead); info is nil when the list has none.
func (p *Prober) CheckShardInfo(key ProbeKey, plan Plan, info *metav1.ShardInfo) (clientFilter bool) {
	if !plan.VerifyShardInfo {
		return plan.ClientFilter
	}
	filtered := info != nil && sameShardSelector(info.Selector, plan.ShardSelector)
	p.Record(key, filtered)
	return !filtered
}

// CheckProbe records for key what answer, the response to plan (see ExclusionPlan), shows, and returns the verdict
// now. Where the list carries shardInfo, that decides. Else its entries do: the object the plan leaves out (or any
// other outside its shardSelector) shows that the server did not filter, and its absence that it did.
func (p *Prober) CheckProbe(key ProbeKey, plan Plan, answer ListSummary) Verdict {
	if answer.CarriesShardInfo() {
		p.CheckShardInfo(key, plan, answer.ShardInfo)
		return p.Verdict(key)
	}
	outside, err := answer.outside(plan.ShardSelector)
	if err != nil || !outside && answer.NamespacesUnknown {
		return p.Verdict(key)
	}
	return p.Record(key, !outside)
}

// sameShardSelector reports whether two shardSelectors select the same namespaces, however they are spelled.
func sameShardSelector(a, b string) bool {
	if a == b {
		return true
	}
	sa, errA := parseShardSelector(a)
	sb, errB := parseShardSelector(b)
	return errA == nil && errB == nil && sa.Equal(sb)
}
