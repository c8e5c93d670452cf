package proxy

import (
	"net/url"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// servedIdle is how long the proxy remembers the view of a list or watch no request asked for since (and no watch
// of which is open). Far longer than between a list and its watch, a paginated list's pages, or a watch's end and
// its resumption; forgetting costs a client one relist at most (servedViews.resumable).
const servedIdle = 10 * time.Minute

// servedKey is what the lists and watches of one informer share: the resourceVersion of one may resume another.
type servedKey struct {
	cluster       string
	resource      schema.GroupResource
	namespace     string
	name          string
	labelSelector string
	fieldSelector string
}

func servedKeyOf(req *Request, query url.Values) servedKey {
	return servedKey{
		cluster:       req.Cluster,
		resource:      req.groupResource(),
		namespace:     req.Namespace,
		name:          req.Name,
		labelSelector: query.Get("labelSelector"),
		fieldSelector: query.Get("fieldSelector"),
	}
}

// resumes reports whether a list or watch goes on from a resourceVersion served earlier instead of fetching a state
// of its own: a watch from a resourceVersion ("" and "0" start with the current state, as does a watch-list), or a
// list's next page.
func resumes(req *Request, query url.Values) bool {
	switch req.Verb {
	case "watch":
		rv := query.Get("resourceVersion")
		initial, _ := strconv.ParseBool(query.Get("sendInitialEvents"))
		return rv != "" && rv != "0" && !initial
	case "list":
		return query.Get("continue") != ""
	}
	return false
}

// servedViews remembers, per servedKey, the view under which the proxy last served it (a list that passed
// listedUnder, a watch), so that a request resuming from a resourceVersion is answered only under the view that
// resourceVersion was served under. A list made before an ownership change, then a watch from its resourceVersion
// after it, would otherwise leave the client without the objects of the namespaces granted meanwhile, and with
// those of the namespaces revoked, for good: no event ever tells of them.
//
// The memory is per key, not per client: a client resuming from a resourceVersion served under another view, after
// another client of the same key was served under the current one, is not caught. Clients of one key in one pod are
// few, and a reflector relists when a watch ends with 410 rather than resuming.
type servedViews struct {
	mu      sync.Mutex
	entries map[servedKey]*servedEntry
	swept   time.Time
}

type servedEntry struct {
	view     view
	known    bool      // view was served: an entry may be made for an open watch first
	watching int       // watches of the key open now: the entry stays while any is
	idle     time.Time // when the key was last served or refused, or its last watch ended
}

func newServedViews() *servedViews { return &servedViews{entries: map[servedKey]*servedEntry{}} }

// served records that key was answered under v at now.
func (s *servedViews) served(key servedKey, v view, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entry(key, now).remember(v)
}

// resumable reports whether a request resuming key may be answered under v: whether the proxy last served key
// under v. A key it never served (a resourceVersion from a create or a GET, a list of other selectors, a proxy
// restarted) is judged by prior, the key's view under the ownership before the last change and whether that change
// came within servedIdle: it is resumable unless that change altered its view. If not resumable, the request is
// refused with 410 Expired and its client fetches the state afresh, under v: so v is remembered as served, and a
// client that resumes again instead of listing is refused once, not for ever.
//
// known says whether the proxy had served key: only such a client's state is one a grant's relists wait for.
func (s *servedViews) resumable(key servedKey, v view, prior func() (view, bool), now time.Time) (ok, known bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, had := s.entries[key]
	known = had && e.known
	if known {
		if e.view.same(v) {
			e.idle = now
			return true, true
		}
	} else if pv, recent := prior(); !recent || pv.same(v) {
		s.entry(key, now).remember(v)
		return true, false
	}
	s.entry(key, now).remember(v)
	return false, known
}

func (e *servedEntry) remember(v view) { e.view, e.known = v, true }

// watchStarted keeps key remembered while its watch is open; watchEnded, called once for each, lets it go.
func (s *servedViews) watchStarted(key servedKey, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entry(key, now).watching++
}

func (s *servedViews) watchEnded(key servedKey, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.entries[key]; e != nil {
		e.watching--
		e.idle = now
	}
}

// entry is key's entry, made if missing, marked used at now; forgets the keys idle for servedIdle now and then.
// Called with mu held.
func (s *servedViews) entry(key servedKey, now time.Time) *servedEntry {
	if now.Sub(s.swept) >= servedIdle {
		for k, e := range s.entries {
			if e.watching == 0 && now.Sub(e.idle) >= servedIdle {
				delete(s.entries, k)
			}
		}
		s.swept = now
	}
	e := s.entries[key]
	if e == nil {
		e = &servedEntry{}
		s.entries[key] = e
	}
	e.idle = now
	return e
}
