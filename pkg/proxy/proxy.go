package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/fedmesh/fedmesh/pkg/breaker"
	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/pkg/proxy/filter"
)

// HostCluster names the API server the proxy fronts directly, in metrics and traffic rules.
const HostCluster = "@host"

// UnknownCluster stands in metrics for every cluster name the proxy does not know: callers may send any, and each
// would be a series of its own for good.
const UnknownCluster = "@unknown"

// Options configure a Proxy.
type Options struct {
	// Host is the API server the proxy fronts; only its address and CA are used.
	Host *rest.Config
	// Store holds the ownership and traffic policy to enforce.
	Store *config.Store
	// Registerer receives the proxy's metrics; nil means a private registry.
	Registerer prometheus.Registerer
	// Log receives the proxy's structured logs.
	Log logr.Logger
	// OwnershipLease is how long the ownership holds without contact with the manager (see Contact); 0 means
	// forever, for a standalone configuration. With a lease the proxy starts owning nothing until its first
	// contact: a configuration persisted before a restart may have been handed on meanwhile.
	OwnershipLease time.Duration
	// RelistBound is how long at most the namespaces an ownership change grants stay unwritable while the
	// operator's informers fetch them afresh (relistFence); 0 means DefaultRelistBound, a negative value no wait.
	RelistBound time.Duration
}

// Proxy is the sidecar's request handling: classify, route to an upstream, enforce the shard's ownership and the
// traffic policy, and forward with the caller's own credentials.
type Proxy struct {
	store   *config.Store
	host    *upstream
	scopes  *scopes
	prober  *filter.Prober
	watches *watches
	served  *servedViews
	relists *relistFence
	engine  *breaker.Engine
	metrics *metrics
	log     logr.Logger
	handler http.Handler

	mu      sync.Mutex
	members map[string]*upstream // by cluster name, rebuilt when the ownership's clusters change
	lease   ownershipLease
	// settling orders the ownership changes taken in (settle): the lease's timer and the store each start them.
	settling sync.Mutex
	// writeGate is held shared by each write (but connection upgrades and pod proxy requests, which change no
	// object) from its ownership check until its response, and exclusively by an ownership change: so a
	// revocation is acknowledged only after the writes begun under it are done.
	writeGate sync.RWMutex
}

// New builds a Proxy and subscribes it to the store's changes.
func New(opts Options) (*Proxy, error) {
	host, err := newUpstream("", opts.Host, nil)
	if err != nil {
		return nil, err
	}
	reg := opts.Registerer
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := newMetrics(reg)
	p := &Proxy{
		store:   opts.Store,
		host:    host,
		scopes:  newScopes(m.resources),
		prober:  &filter.Prober{},
		watches: newWatches(),
		served:  newServedViews(),
		relists: newRelistFence(relistBound(opts.RelistBound)),
		metrics: m,
		log:     opts.Log,
		members: map[string]*upstream{},
		lease:   ownershipLease{duration: opts.OwnershipLease, expired: opts.OwnershipLease > 0},
	}
	p.scopes.rescoped = p.endRescoped
	cur := opts.Store.Current()
	p.engine, err = breaker.New(cur.Traffic, breaker.Options{Observer: p.metrics.observer()})
	if err != nil {
		return nil, err
	}
	p.configChanged(&config.Snapshot{}, cur)
	opts.Store.Subscribe(p.configChanged)
	p.handler = breaker.Middleware(p.engine, policyRequest, http.HandlerFunc(p.serve))
	return p, nil
}

// Ready reports whether the proxy has an ownership to enforce; before that it owns nothing.
func (p *Proxy) Ready() bool { return p.ownership() != nil }

// ServeHTTP classifies the request once, then runs it through the traffic policy and the ownership rules.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	req, err := Classify(r)
	if err != nil {
		writeStatus(w, http.StatusBadRequest, "BadRequest", err.Error())
		return
	}
	rec := &statusRecorder{ResponseWriter: w, req: &req, metrics: p.metrics}
	u, known := p.upstreamFor(req.Cluster)
	defer func() { p.metrics.answered(rec, known, time.Since(start)) }()
	if !known {
		// Before the traffic policy: its breakers are kept per cluster, and a caller must not make up clusters
		// for it to keep.
		refuse(rec, http.StatusNotFound, string(metav1.StatusReasonNotFound), "cluster %q is not known to this proxy", req.Cluster)
		return
	}
	p.handler.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), routedKey{}, routed{req: &req, upstream: u, recorder: rec})))
}

// routed is a classified request and the upstream it goes to, handed through the traffic policy to serve.
type routed struct {
	req      *Request
	upstream *upstream
	recorder *statusRecorder // where its answer is recorded for the metrics
}

type routedKey struct{}

func routedFrom(r *http.Request) routed { return r.Context().Value(routedKey{}).(routed) }

// policyRequest is what the traffic policy's rules match on.
func policyRequest(r *http.Request) breaker.Request {
	req := routedFrom(r).req
	return breaker.Request{
		Verb:        req.Verb,
		Group:       req.APIGroup,
		Resource:    req.Resource,
		Namespace:   req.Namespace,
		Cluster:     clusterLabel(req.Cluster),
		LongRunning: req.longRunning(),
	}
}

func clusterLabel(cluster string) string {
	if cluster == "" {
		return HostCluster
	}
	return cluster
}

// resourceLabel names req's resource in messages; metrics name it so only once it is known (resourceLabels).
func resourceLabel(req *Request) string { return groupResourceLabel(req.groupResource()) }

func groupResourceLabel(gr schema.GroupResource) string {
	if gr.Group == "" {
		return gr.Resource
	}
	return gr.Group + "/" + gr.Resource
}

func (req *Request) groupResource() schema.GroupResource {
	return schema.GroupResource{Group: req.APIGroup, Resource: req.Resource}
}

// longRunning marks the requests the API server itself treats as long-running: watches, and the exec, attach,
// port-forward, proxy and log subresources of any resource (a followed log, a node's proxy). They are not timed, take
// no in-flight slot and are never slow to a breaker; which of them are fenced is writes' business.
func (req *Request) longRunning() bool {
	if req.Verb == "watch" || req.Verb == "proxy" {
		return true
	}
	switch req.Subresource {
	case "exec", "attach", "portforward", "proxy", "log":
		return true
	}
	return false
}

// upstreamFor routes a request to the host or to the member cluster its path names.
func (p *Proxy) upstreamFor(cluster string) (*upstream, bool) {
	if cluster == "" {
		return p.host, true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	u, ok := p.members[cluster]
	return u, ok
}

// configChanged follows a new snapshot: member upstreams, the traffic policy, and — when the ownership
// changed — the writes and watches begun under the old one (settle).
func (p *Proxy) configChanged(old, cur *config.Snapshot) {
	p.metrics.setConfig(string(config.KindOwnership), old.OwnershipVersion, cur.OwnershipVersion)
	p.metrics.setConfig(string(config.KindTraffic), old.TrafficVersion, cur.TrafficVersion)
	if cur.TrafficVersion != old.TrafficVersion {
		if err := p.engine.Update(cur.Traffic); err != nil {
			p.log.Error(err, "traffic policy not applied") // the store validated it; keep the last policy
		}
	}
	if cur.Ownership == old.Ownership {
		return
	}
	p.rebuildMembers(cur.Ownership)
	p.settle()
}

// relistBound is the RelistBound option's value with its default.
func relistBound(d time.Duration) time.Duration {
	switch {
	case d == 0:
		return DefaultRelistBound
	case d < 0:
		return 0
	}
	return d
}

// settle brings the proxy in line with the ownership it now enforces: it waits for the writes begun under the
// previous one to finish, since once the change is acknowledged the manager may grant the ranges to another shard
// and two writers must never overlap; then it ends the watches the change shows differently, so that their
// clients relist, and keeps what it grants unwritable until they have (relistFence). It runs on every change of
// what is enforced (a new configuration, the lease lapsing, contact returning), so the ownership gauges are set
// here: from what is enforced, not what is stored, which a proxy out of contact no longer uses.
func (p *Proxy) settle() {
	p.settling.Lock()
	defer p.settling.Unlock()
	p.writeGate.Lock()
	p.writeGate.Unlock() //nolint:staticcheck // an empty critical section: waiting for the writes is the point
	own := p.ownership()
	p.metrics.owning(own)
	// The relists are awaited before the watches end: a client that lists again at once is then counted.
	n := p.watches.endStale(own, func(stale []servedKey) { p.relists.changed(own, stale, time.Now()) })
	if n > 0 {
		p.metrics.endedWatches.Add(float64(n))
		if own == nil {
			p.log.Info("owning nothing now; ended watches so clients relist", "watches", n)
		} else {
			p.log.Info("ownership changed; ended watches so clients relist", "watches", n, "epoch", own.Epoch)
		}
	}
}

func (p *Proxy) rebuildMembers(own *config.Ownership) {
	p.mu.Lock()
	old := p.members
	p.mu.Unlock()
	members := map[string]*upstream{}
	for _, c := range own.Clusters {
		if u := old[c.Name]; u != nil && u.member.Same(c) {
			// The same API server, reached the same way: keep the upstream, its connections (each upstream has a
			// transport of its own, so a new one would dial again on every configuration) and what discovery told
			// of it (a resource it does not know yet is looked up again anyway).
			members[c.Name] = u
			continue
		}
		u, err := newMemberUpstream(c)
		if err != nil { // names no proxy header value (config.Cluster)
			p.log.Error(err, "member cluster not reachable through the proxy", "cluster", c.Name)
			continue
		}
		members[c.Name] = u
		p.scopes.forget(c.Name)
	}
	for name := range members {
		p.engine.ClusterJoined(name) // before it is routed to: one that left and came back keeps breakers again
	}
	p.mu.Lock()
	p.members = members
	p.mu.Unlock()
	for name := range old {
		if members[name] == nil {
			// Left the federation (or no longer reachable through the proxy): what is kept of it goes too, its
			// breakers' state series with them, and a request routed to it before is judged by breakers kept
			// nowhere. Should it come back, it starts afresh.
			p.engine.ForgetCluster(name)
			p.scopes.forget(name)
		}
	}
}

// forward sends the request upstream, optionally changing the response on its way back. It is the only way a
// request reaches an upstream, and the only answers a circuit breaker judges (breaker.Sent): whatever the proxy
// answers itself says nothing of the upstream's health.
func forward(u *upstream, w http.ResponseWriter, r *http.Request, req *Request, modify func(*http.Response) error) {
	breaker.Sent(w)
	r = r.Clone(r.Context())
	r.URL.Path, r.URL.RawPath = req.UpstreamPath, ""
	if modify == nil {
		u.forward.ServeHTTP(w, r)
		return
	}
	rp := *u.forward
	rp.ModifyResponse = modify
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		switch {
		case errors.Is(err, filter.ErrNotAcceptable):
			// The API server answered; the proxy cannot pass its answer on in the form asked for. Not the
			// upstream's failure, nor one for a circuit breaker to count.
			refuse(w, http.StatusNotAcceptable, string(metav1.StatusReasonNotAcceptable), "the proxy cannot pass this response on: %v", err)
			return
		case errors.Is(err, errListedUnderOther):
			refuse(w, http.StatusGone, string(metav1.StatusReasonExpired), "%v", err)
			return
		}
		upstreamError(w, r, err)
	}
	(&rp).ServeHTTP(w, r)
}

// refuse answers with a Status naming the reason.
func refuse(w http.ResponseWriter, code int, reason, format string, args ...any) {
	writeStatus(w, code, reason, fmt.Sprintf(format, args...))
}
