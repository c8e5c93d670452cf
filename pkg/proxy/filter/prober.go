package filter

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Verdict is what a Prober learned of whether an upstream filters a resource by shardSelector.
type Verdict uint8

const (
	// Unknown: no list response with a shardSelector has been seen yet.
	Unknown Verdict = iota
	// ServerFilters: a list response echoed the shardSelector in metadata.shardInfo.
	ServerFilters
	// ServerDoesNotFilter: a list response came back without the shardSelector echoed; the proxy filters.
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
// shows it list responses (CheckList) and asks which mode to use (Resolve). The zero Prober is ready to use and
// safe for concurrent use.
//
// The first observation sets the verdict. A later list without shardInfo turns ServerFilters into
// ServerDoesNotFilter (one API server of an HA set may be older, or have the gate off), but never the other way:
// once the proxy filters a resource itself, it keeps doing so until Forget (say, on a config change).
type Prober struct {
	mu       sync.Mutex
	verdicts map[ProbeKey]Verdict
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
	return v
}

// Forget drops what p knows of key, so that the next list probes again.
func (p *Prober) Forget(key ProbeKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.verdicts, key)
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
// the response must echo plan.ShardSelector in metadata.shardInfo; if it does not, the server did not filter
// (or filtered by something else) and the proxy filters this very response, so that nothing leaks.
func (p *Prober) CheckList(key ProbeKey, plan Plan, body []byte, contentType string) (clientFilter bool, err error) {
	if !plan.VerifyShardInfo {
		return plan.ClientFilter, nil
	}
	echoed, ok, err := ShardInfoSelector(body, contentType)
	if err != nil {
		return true, err
	}
	var info *metav1.ShardInfo
	if ok {
		info = &metav1.ShardInfo{Selector: echoed}
	}
	return p.CheckShardInfo(key, plan, info), nil
}

// CheckShardInfo is CheckList for a list whose metadata.shardInfo has been read already (see ReadListHead); info
// is nil when the list has none.
func (p *Prober) CheckShardInfo(key ProbeKey, plan Plan, info *metav1.ShardInfo) (clientFilter bool) {
	if !plan.VerifyShardInfo {
		return plan.ClientFilter
	}
	filtered := info != nil && sameShardSelector(info.Selector, plan.ShardSelector)
	p.Record(key, filtered)
	return !filtered
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
