package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	restwatch "k8s.io/client-go/rest/watch"

	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/pkg/proxy/filter"
	"github.com/fedmesh/fedmesh/pkg/shard"
)

// nothingSelector matches no object: no name contains "/". Sent upstream when the shard owns nothing a request
// could see, so the API server itself answers with an empty list (in the caller's encoding, with a current
// resourceVersion) or an idle watch, and still checks the caller's RBAC.
const nothingSelector = "metadata.name=fedmesh/owns-nothing"

// listWatch narrows a list or watch to what the shard owns. A watch is relayed until an ownership change shows
// its resource differently (viewOf), then ended so that its client lists again; a list answered after such a
// change is refused for the same end (listedUnder); a watch or a list's next page resuming from a resourceVersion
// served under another view is refused too (servedViews).
func (p *Proxy) listWatch(w http.ResponseWriter, r *http.Request, req *Request, u *upstream, own *config.Ownership, namespaced bool) {
	rec := routedFrom(r).recorder
	count := func(how string) { p.metrics.countListWatch(rec, how) }
	v := viewOf(own, req, namespaced)
	query := r.URL.Query()
	key := servedKeyOf(req, query)
	if resumes(req, query) {
		prior := func() (view, bool) {
			prev, recent := p.relists.prior(time.Now())
			return viewOf(prev, req, namespaced), recent
		}
		if ok, known := p.served.resumable(key, v, prior, time.Now()); !ok {
			count("expired")
			if req.Verb == "watch" && known {
				p.relists.madeStale(key, time.Now()) // an informer's watch from before the change
			}
			p.expire(w, r, req, u)
			return
		}
		if req.Verb == "watch" {
			p.relists.resumed(key) // from a list served under v: the informer has stored that list
		}
	}
	if req.Verb == "watch" {
		p.served.watchStarted(key, time.Now())
		defer func() { p.served.watchEnded(key, time.Now()) }()
	}
	a := answering{
		key:        key,
		namespaced: namespaced,
		unchanged:  func(cur *config.Ownership) bool { return viewOf(cur, req, namespaced).same(v) },
		served:     func() { p.served.served(key, v, time.Now()) },
		stale:      func() { p.relists.madeStale(key, time.Now()) },
	}
	switch req.Verb {
	case "list":
		a.served = func() {
			p.served.served(key, v, time.Now())
			p.relists.listed(key)
		}
		a.stale = func() {} // see relistFence.madeStale
	case "watch":
		if initial, _ := strconv.ParseBool(query.Get("sendInitialEvents")); initial && p.relists.awaits(key, time.Now()) {
			a.initialEventsEnded = func() { p.relists.initialEventsEnded(key) }
		}
	}
	switch v.shows {
	case showsNothing:
		count("nothing")
		p.askForNothing(w, r, req, u, a)
	case showsAll:
		count("none")
		forward(u, w, r, req, p.listedUnder(req, a, p.watchResponse(req, nil, false, a)))
	default:
		p.filtered(w, r, req, u, own, count, a)
	}
}

// answering is how a list or watch is answered under its view: unchanged says whether an ownership leaves that view
// as it was, served records that the proxy answered under it (servedViews), stale that it refused or ended it for a
// change of view (relistFence). namespaced is the scope its resource was served under; a watch ends once discovery
// tells the other (watches.endRescoped). initialEventsEnded, when set, is called once a watch-list relays the
// bookmark that ends its initial events.
type answering struct {
	key                servedKey
	namespaced         bool
	unchanged          func(*config.Ownership) bool
	served             func()
	stale              func()
	initialEventsEnded func()
}

// staleView answers as if the view had changed already: a watch is ended at once, a list refused.
var staleView = answering{unchanged: func(*config.Ownership) bool { return false }, served: func() {}, stale: func() {}}

// expire answers a request resuming from a resourceVersion served under another view with 410 Expired, as the API
// server answers one it no longer serves, so that its client lists again: a list's next page with a Status, a
// watch with an ERROR event (a client-go reflector relists on either). The watch is asked upstream for nothing, so
// that the event is in the encoding the caller asked for, after the caller's RBAC was checked.
func (p *Proxy) expire(w http.ResponseWriter, r *http.Request, req *Request, u *upstream) {
	if req.Verb == "list" {
		refuse(w, http.StatusGone, string(metav1.StatusReasonExpired), "%v", errServedUnderOther)
		return
	}
	p.askForNothing(w, r, req, u, staleView)
}

// errServedUnderOther is a request resuming from a resourceVersion served under another view.
var errServedUnderOther = errors.New("the shard's namespaces changed since this resourceVersion was served; list again")

// filtered sends a list or watch of a sharded resource across namespaces with the shard's filter.
func (p *Proxy) filtered(w http.ResponseWriter, r *http.Request, req *Request, u *upstream, own *config.Ownership, count func(string), a answering) {
	owned := own.Owned()
	key := filter.ProbeKey{Cluster: req.Cluster, GroupResource: req.groupResource()}
	mode := filter.Mode(own.FilterMode)
	judged := mode == filter.ModeAuto || mode == filter.ModeServer
	if judged && req.Verb == "watch" && p.prober.ProbeDue(key, time.Now()) {
		// A watch shows nothing to judge by before its events: learn from two small lists first whether the server
		// filters, so that the watch asks for the right thing.
		p.probeOnce(r, req, u, owned, key)
	}
	mode = p.prober.Resolve(key, mode)
	plan, err := filter.Rewrite(mode, owned, r.URL.Query())
	switch {
	case errors.Is(err, filter.ErrOwnsNothing):
		count("nothing")
		p.askForNothing(w, r, req, u, a)
		return
	case errors.Is(err, filter.ErrBadSelector):
		refuse(w, http.StatusBadRequest, string(metav1.StatusReasonBadRequest), "%v", err)
		return
	case err != nil:
		refuse(w, http.StatusInternalServerError, string(metav1.StatusReasonInternalError), "%v", err)
		return
	}
	count(string(mode))
	checked := plan.ClientFilter || plan.VerifyShardInfo
	withoutRowObjects := judged && checked && asksTableWithoutObjects(r)
	if withoutRowObjects {
		// Rows without their objects tell no namespace: ask for the objects' metadata, judge the rows by it, and
		// leave the objects out before the client sees them.
		plan.Query.Set(includeObjectParam, "Metadata")
	}
	r = r.Clone(r.Context())
	r.URL.RawQuery = plan.Query.Encode()
	if req.Verb == "watch" {
		var keep func(string) bool
		if checked {
			keep = p.watchKeep(req, key, owned, plan)
		}
		forward(u, w, r, req, p.watchResponse(req, keep, withoutRowObjects, a))
		return
	}
	if checked {
		// The proxy reads this body, or at least its start: ask for it uncompressed.
		r.Header.Del("Accept-Encoding")
	}
	forward(u, w, r, req, p.listedUnder(req, a, p.listResponse(req, key, plan, owned.ContainsNamespace, withoutRowObjects)))
}

// includeObjectParam is how a client asks a Table's rows to carry their objects (None, Metadata or Object).
const includeObjectParam = "includeObject"

// asksTableWithoutObjects reports whether r asks for a Table whose rows carry no objects (kubectl get's
// includeObject=None).
func asksTableWithoutObjects(r *http.Request) bool {
	return r.URL.Query().Get(includeObjectParam) == "None" && strings.Contains(r.Header.Get("Accept"), "as=Table")
}

// watchKeep is what a watch planned as plan keeps: the events of the shard's own namespaces, even where the server
// is trusted to filter them, since the API server answering this watch may not be the one seen to filter (an HA
// set with one older, or with the gate off). Asked with a shardSelector, the first event outside it shows that this
// server does not filter: it is dropped, and recorded, so that lists are judged again and later requests ask for
// everything and filter in the proxy. Only the event's namespace is read, as client mode reads it.
func (p *Proxy) watchKeep(req *Request, key filter.ProbeKey, owned shard.Set, plan filter.Plan) func(string) bool {
	if plan.ShardSelector == "" {
		return owned.ContainsNamespace
	}
	seen := false // keep is called by the one goroutine that reads the watch
	return func(ns string) bool {
		if owned.ContainsNamespace(ns) {
			return true
		}
		if !seen {
			seen = true
			if p.prober.Verdict(key) != filter.ServerDoesNotFilter {
				p.prober.Record(key, false)
				p.log.Info("a watch asked with a shardSelector showed another shard's object: the API server does not filter; filtering in the proxy", "cluster", clusterLabel(req.Cluster), "resource", resourceLabel(req))
			}
		}
		return false
	}
}

// listResponse checks a list response as plan says: that the server filtered it, else filters it in the proxy with
// keep. withoutRowObjects leaves a Table's row objects out afterwards, as its client asked.
func (p *Proxy) listResponse(req *Request, key filter.ProbeKey, plan filter.Plan, keep func(string) bool, withoutRowObjects bool) func(*http.Response) error {
	return func(resp *http.Response) error {
		if resp.StatusCode != http.StatusOK || (!plan.ClientFilter && !plan.VerifyShardInfo) {
			return nil
		}
		contentType := resp.Header.Get("Content-Type")
		clientFilter, checked, counted := plan.ClientFilter, !plan.VerifyShardInfo, false
		var head []byte
		if plan.VerifyShardInfo {
			// A list mostly carries its metadata before its items: where it echoes the shardSelector there, stream
			// the items on instead of holding the whole list. Any other list is read whole: its kind and its
			// entries decide, and a page's remainingItemCount must go.
			h, err := filter.ReadListHead(resp.Body, contentType)
			if err != nil {
				resp.Body.Close()
				return err
			}
			if h.Known && h.ShardInfo != nil {
				checked, counted = true, h.HasRemainingItemCount
				clientFilter = p.prober.CheckShardInfo(key, plan, h.ShardInfo)
				if !clientFilter && !counted && !withoutRowObjects {
					resp.Body = readCloser{io.MultiReader(bytes.NewReader(h.Read), resp.Body), resp.Body}
					return nil
				}
			}
			head = h.Read
		}
		body, err := io.ReadAll(io.MultiReader(bytes.NewReader(head), resp.Body))
		resp.Body.Close()
		if err != nil {
			return err
		}
		if !checked {
			// A list that shows nothing either way (no entry outside the shard, the server not known to filter) is
			// filtered all the same: that keeps every entry, and costs no probe. One whose entries do not all tell
			// their namespace is filtered too, whatever the verdict, which refuses it.
			var s filter.ListSummary
			if s, err = filter.ReadListSummary(body, contentType); err != nil {
				p.log.V(1).Info("cannot read the list; filtering in the proxy", "resource", resourceLabel(req), "error", err.Error())
				clientFilter = true
			} else {
				clientFilter, counted = p.prober.CheckSummary(key, plan, s), s.HasRemainingItemCount
			}
		}
		switch {
		case clientFilter:
			if body, err = filter.FilterList(body, contentType, keep); err != nil {
				return fmt.Errorf("filter %s list: %w", resourceLabel(req), err)
			}
		case counted:
			// The server filtered, but counted other shards' objects in remainingItemCount.
			if body, err = filter.WithoutRemainingItemCount(body, contentType); err != nil {
				return fmt.Errorf("%s list: %w", resourceLabel(req), err)
			}
		}
		if withoutRowObjects {
			if body, err = filter.WithoutRowObjects(body, contentType); err != nil {
				return fmt.Errorf("%s list: %w", resourceLabel(req), err)
			}
		}
		setBody(resp, body)
		return nil
	}
}

// readCloser reads from one reader and closes another: a body whose start was read already.
type readCloser struct {
	io.Reader
	io.Closer
}

// watchResponse relays a watch event by event, dropping the events keep refuses (nil keeps all) and leaving
// Table rows' objects out where withoutRowObjects says, and ends it with a 410 Expired ERROR event once an
// ownership is no longer one under which the watch is unchanged, so the client relists.
func (p *Proxy) watchResponse(req *Request, keep func(string) bool, withoutRowObjects bool, a answering) func(*http.Response) error {
	if req.Verb != "watch" {
		return nil
	}
	return func(resp *http.Response) error {
		if resp.StatusCode != http.StatusOK {
			return nil
		}
		contentType := resp.Header.Get("Content-Type")
		expired, err := expiredEvent(contentType)
		if err != nil {
			return err
		}
		// The upstream's 200, before the caller is sent one: the resource is served.
		resource, cluster := p.metrics.resources.answered(req, resp.StatusCode), clusterLabel(req.Cluster)
		relayed := p.metrics.watchEvents.WithLabelValues(resource, "relayed", cluster)
		// Drops are counted where keep refuses; relays where an event leaves the reader, so that keep stays nil
		// when nothing is filtered and the reader relays events without decoding them.
		var counted func(string) bool
		if keep != nil {
			dropped := p.metrics.watchEvents.WithLabelValues(resource, "dropped", cluster)
			counted = func(ns string) bool {
				if keep(ns) {
					return true
				}
				dropped.Inc()
				return false
			}
		}
		events, err := filter.NewWatchReader(resp.Body, contentType, counted)
		if err != nil {
			return err
		}
		initialEventsEnded := a.initialEventsEnded
		next := func(wait bool) ([]byte, error) {
			read := events.NextBuffered
			if wait {
				read = events.Next
			}
			event, err := read()
			if event != nil && withoutRowObjects {
				if event, err = filter.WithoutRowObjectsInEvent(event, contentType); err != nil {
					return nil, err
				}
			}
			if event != nil {
				relayed.Inc()
				if initialEventsEnded != nil && endsInitialEvents(event) {
					initialEventsEnded()
					initialEventsEnded = nil
				}
			}
			return event, err
		}
		body := p.watches.track(resp.Body, next, expired, a.key, a.unchanged, a.namespaced)
		// The ownership, or the scope discovery tells, may have changed while the request was upstream, after the
		// last look at the watches.
		if a.unchanged(p.ownership()) && p.scopeHolds(req, a.namespaced) {
			a.served()
		} else {
			body.end()
			a.stale()
		}
		resp.Body = body
		return nil
	}
}

// scopeHolds reports whether discovery still tells the scope a watch across namespaces of req's resource was served
// under (namespaced); one in a namespace took none from it.
func (p *Proxy) scopeHolds(req *Request, namespaced bool) bool {
	if req.Namespace != "" {
		return true
	}
	told, found := p.scopes.told(req.Cluster, req.APIGroup, req.APIVersion, req.Resource)
	return !found || told == namespaced
}

// endRescoped ends the watches of group's resources on cluster whose scope discovery now tells otherwise (changed:
// resource -> namespaced), so that their clients list again under the new scope; resuming from what they were
// served is refused, its view being another.
func (p *Proxy) endRescoped(cluster, group string, changed map[string]bool) {
	n := p.watches.endRescoped(cluster, group, changed, func(key servedKey) { p.relists.madeStale(key, time.Now()) })
	if n > 0 {
		p.metrics.endedWatches.Add(float64(n))
		p.log.Info("a resource's scope changed; ended watches so clients relist", "cluster", clusterLabel(cluster), "group", group, "watches", n)
	}
}

// askForNothing sends the request upstream with a field selector no object matches.
func (p *Proxy) askForNothing(w http.ResponseWriter, r *http.Request, req *Request, u *upstream, a answering) {
	r = r.Clone(r.Context())
	q := r.URL.Query()
	if fs := q.Get("fieldSelector"); fs != "" {
		q.Set("fieldSelector", fs+","+nothingSelector)
	} else {
		q.Set("fieldSelector", nothingSelector)
	}
	r.URL.RawQuery = q.Encode()
	forward(u, w, r, req, p.listedUnder(req, a, p.watchResponse(req, nil, false, a)))
}

// errListedUnderOther is a list answered after the ownership it was asked under changed.
var errListedUnderOther = errors.New("the shard's namespaces changed while the list was answered; list again")

// listedUnder passes a list's response through next, then refuses it if the ownership changed meanwhile so that
// the list no longer shows what the shard owns: its client would keep objects of namespaces the shard gave up, or
// miss those it got, and the watch it starts next, narrowed to the new ownership, would never tell it. The refusal
// is 410 Expired, on which a client-go reflector lists again. A watch is ended instead (watchResponse, settle).
// A list not refused is served under its view, which the watch from its resourceVersion is checked against.
func (p *Proxy) listedUnder(req *Request, a answering, next func(*http.Response) error) func(*http.Response) error {
	if req.Verb != "list" {
		return next
	}
	return func(resp *http.Response) error {
		if next != nil {
			if err := next(resp); err != nil {
				return err
			}
		}
		if resp.StatusCode != http.StatusOK {
			return nil
		}
		if !a.unchanged(p.ownership()) {
			resp.Body.Close()
			a.stale()
			return errListedUnderOther
		}
		a.served()
		return nil
	}
}

// endsInitialEvents reports whether a watch event, as relayed, is the bookmark that ends a watch-list's initial
// events. Read without decoding, in any encoding (JSON, CBOR and protobuf carry strings as they are): the event type
// and the annotation's key, both spelled out. An object of another event that carried both words would be taken
// for it; only the watch-lists a grant awaits are read so, and only until that bookmark.
func endsInitialEvents(event []byte) bool {
	return bytes.Contains(event, []byte(metav1.InitialEventsAnnotationKey)) && bytes.Contains(event, []byte(watch.Bookmark))
}

// expiredEvent is a watch ERROR event with a 410 Expired Status, encoded and framed for contentType.
func expiredEvent(contentType string) ([]byte, error) {
	info, err := serializerFor(contentType)
	if err == nil && info.StreamSerializer == nil {
		err = filter.ErrNotAcceptable
	}
	if err != nil {
		return nil, fmt.Errorf("watch content type %q is not a stream the proxy can end: %w", contentType, err)
	}
	var buf bytes.Buffer
	frames := info.StreamSerializer.Framer.NewFrameWriter(&buf)
	enc := restwatch.NewEncoder(streaming.NewEncoder(frames, info.StreamSerializer.Serializer), info.Serializer)
	status := &metav1.Status{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
		Status:   metav1.StatusFailure,
		Code:     http.StatusGone,
		Reason:   metav1.StatusReasonExpired,
		Message:  "the shard's namespaces changed; list again",
	}
	if err := enc.Encode(&watch.Event{Type: watch.Error, Object: status}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func setBody(resp *http.Response, body []byte) {
	resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	resp.Header.Del("Content-Encoding")
}
