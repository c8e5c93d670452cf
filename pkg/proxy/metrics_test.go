package proxy

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/rest"

	"github.com/fedmesh/fedmesh/pkg/breaker"
	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/pkg/shard"
)

// Every transition to open counts as a trip, including one from half-open; the gauge shows only the last state.
func TestBreakerTripsCountTransitionsToOpen(t *testing.T) {
	m := newMetrics(prometheus.NewRegistry())
	obs := m.observer()
	for _, tr := range [][2]breaker.BreakerState{
		{breaker.BreakerClosed, breaker.BreakerOpen},
		{breaker.BreakerOpen, breaker.BreakerHalfOpen},
		{breaker.BreakerHalfOpen, breaker.BreakerOpen},
		{breaker.BreakerOpen, breaker.BreakerHalfOpen},
		{breaker.BreakerHalfOpen, breaker.BreakerClosed},
	} {
		obs.BreakerChanged("members", "member1", tr[0], tr[1])
	}
	obs.BreakerChanged("other", "member2", breaker.BreakerClosed, breaker.BreakerOpen)
	if got := value(t, m.breakerTrips.WithLabelValues("members", "member1")); got != 2 {
		t.Errorf("trips of members/member1 = %v, want 2", got)
	}
	if got := value(t, m.breakerTrips.WithLabelValues("other", "member2")); got != 1 {
		t.Errorf("trips of other/member2 = %v, want 1", got)
	}
	if got := value(t, m.breakerState.WithLabelValues("members", "member1")); got != 0 {
		t.Errorf("state of members/member1 = %v, want 0 (closed)", got)
	}
}

// value reads a counter's or a gauge's current value.
func value(t *testing.T, c prometheus.Metric) float64 {
	t.Helper()
	var out dto.Metric
	if err := c.Write(&out); err != nil {
		t.Fatal(err)
	}
	if out.Counter != nil {
		return out.Counter.GetValue()
	}
	return out.Gauge.GetValue()
}

// A GET is timed under its verb and cluster; a watch, whether asked as a list with watch=true or by the /watch/
// path, is counted but not timed: its duration is the watch's lifetime, not the proxy's latency.
func TestDurationObservesAnswersNotWatches(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("watch") == "true" || strings.HasPrefix(r.URL.Path, "/api/v1/watch/") {
			return // a watch that ends at once, without events
		}
		io.WriteString(w, `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web","namespace":"a"}}`)
	}))
	defer upstream.Close()
	p := newOwningProxy(t, upstream)
	for _, path := range []string{
		"/api/v1/namespaces/a/pods/web",
		"/api/v1/namespaces/a/pods?watch=true",
		"/api/v1/watch/namespaces/a/pods",
	} {
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
		}
	}
	if got := value(t, p.metrics.requests.WithLabelValues("watch", "pods", "200", HostCluster)); got != 2 {
		t.Errorf("watches counted = %v, want 2", got)
	}
	want := map[string]uint64{"cluster=" + HostCluster + " verb=get": 1}
	if got := observations(t, p.metrics.duration); !maps.Equal(got, want) {
		t.Errorf("durations observed = %v, want %v", got, want)
	}
}

// observations reads a histogram's sample count per series, keyed by its labels ("name=value", sorted by name).
func observations(t *testing.T, h *prometheus.HistogramVec) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	for labels, d := range collected(t, h) {
		out[labels] = d.GetHistogram().GetSampleCount()
	}
	return out
}

// collected reads a collector's series, keyed by their labels ("name=value", sorted by name).
func collected(t *testing.T, c prometheus.Collector) map[string]*dto.Metric {
	t.Helper()
	ch := make(chan prometheus.Metric)
	go func() { c.Collect(ch); close(ch) }()
	out := map[string]*dto.Metric{}
	for m := range ch {
		d := &dto.Metric{}
		if err := m.Write(d); err != nil {
			t.Fatal(err)
		}
		var labels []string
		for _, l := range d.GetLabel() {
			labels = append(labels, l.GetName()+"="+l.GetValue())
		}
		out[strings.Join(labels, " ")] = d
	}
	return out
}

// A resource no API server serves is named @unknown in the request metrics, however many a caller makes up: each
// would otherwise be a series of its own for good. One an upstream serves keeps its name, from its first list on
// and also in a 404 for an object it does not have or a write the fence refuses; so does one its discovery lists.
func TestMadeUpResourcesShareOneLabel(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v1/namespaces/a/configmaps":
			io.WriteString(w, `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}`)
			return
		case "/api/v1":
			io.WriteString(w, `{"kind":"APIResourceList","groupVersion":"v1","resources":[{"name":"nodes","namespaced":false,"kind":"Node","verbs":["get"]}]}`)
			return
		}
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
	}))
	defer upstream.Close()
	p, _ := breakerProxy(t, upstream, `{}`)
	for i := range 50 {
		if c := answer(p, "GET", fmt.Sprintf("/api/v1/namespaces/a/made-up-%d", i)); c != http.StatusNotFound {
			t.Fatalf("list of a made-up namespaced resource: %d, want the upstream's 404", c)
		}
		if c := answer(p, "GET", fmt.Sprintf("/apis/made-up-%d.example.com/v1/things", i)); c != http.StatusNotFound {
			t.Fatalf("list of a made-up cluster-scoped resource: %d, want discovery's 404", c)
		}
	}
	if c := answer(p, "GET", "/api/v1/namespaces/a/configmaps"); c != http.StatusOK {
		t.Fatalf("list of configmaps: %d, want 200", c)
	}
	if c := answer(p, "GET", "/api/v1/namespaces/a/configmaps/missing"); c != http.StatusNotFound {
		t.Fatalf("get of a missing configmap: %d, want 404", c)
	}
	if c := answer(p, "GET", "/api/v1/nodes/missing"); c != http.StatusNotFound {
		t.Fatalf("get of a missing node: %d, want 404", c)
	}
	for _, path := range []string{"/api/v1/namespaces/b/made-up-w", "/api/v1/namespaces/b/configmaps"} {
		if c := answer(p, "POST", path); c != http.StatusForbidden {
			t.Fatalf("POST %s into another shard's namespace: %d, want the fence's 403", path, c)
		}
	}
	for _, tt := range []struct {
		what string
		c    prometheus.Collector
		want []string
	}{
		{"fedmesh_proxy_requests_total", p.metrics.requests, []string{
			"cluster=@host code=200 resource=configmaps verb=list",
			"cluster=@host code=403 resource=@unknown verb=create",
			"cluster=@host code=403 resource=configmaps verb=create",
			"cluster=@host code=404 resource=@unknown verb=list",
			"cluster=@host code=404 resource=configmaps verb=get",
			"cluster=@host code=404 resource=nodes verb=get",
		}},
		{"fedmesh_proxy_fenced_writes_total", p.metrics.fenced, []string{
			"cluster=@host resource=@unknown",
			"cluster=@host resource=configmaps",
		}},
		{"fedmesh_proxy_list_watch_total", p.metrics.listWatches, []string{
			"cluster=@host filter=none resource=@unknown verb=list",
			"cluster=@host filter=none resource=configmaps verb=list",
		}},
	} {
		if got := labelSets(t, tt.c); !slices.Equal(got, tt.want) {
			t.Errorf("%s series %q, want %q", tt.what, got, tt.want)
		}
	}
	if got := value(t, p.metrics.requests.WithLabelValues("list", "@unknown", "404", HostCluster)); got != 100 {
		t.Errorf("lists of made-up resources counted %v, want 100", got)
	}
}

// A request of no resource is named by its HTTP method, whatever the caller makes up: the standard methods keep their
// names in the request metrics, every other shares @other, as each would otherwise be a series of its own for good.
func TestMadeUpMethodsShareOneVerbLabel(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusMethodNotAllowed)
	}))
	defer upstream.Close()
	p, _ := breakerProxy(t, upstream, `{}`)
	for i := range 50 {
		answer(p, fmt.Sprintf("M%d", i), "/version")
	}
	answer(p, http.MethodOptions, "/version")
	answer(p, http.MethodHead, "/version")
	for _, tt := range []struct {
		what string
		c    prometheus.Collector
		want []string
	}{
		{"fedmesh_proxy_requests_total", p.metrics.requests, []string{
			"cluster=@host code=405 resource= verb=@other",
			"cluster=@host code=405 resource= verb=head",
			"cluster=@host code=405 resource= verb=options",
		}},
		{"fedmesh_proxy_request_duration_seconds", p.metrics.duration, []string{
			"cluster=@host verb=@other",
			"cluster=@host verb=head",
			"cluster=@host verb=options",
		}},
	} {
		if got := labelSets(t, tt.c); !slices.Equal(got, tt.want) {
			t.Errorf("%s series %q, want %q", tt.what, got, tt.want)
		}
	}
	if got := value(t, p.metrics.requests.WithLabelValues(OtherVerb, "", "405", HostCluster)); got != 50 {
		t.Errorf("requests of made-up methods counted %v, want 50", got)
	}
}

// An upstream that answers a CORS preflight for any path, or redirects, shows no resource it serves: the resources
// of such requests stay @unknown, however many a caller makes up, in those requests' metrics and in later ones.
func TestPreflightsAndRedirectsLearnNoResource(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodOptions {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	}))
	defer upstream.Close()
	p, _ := breakerProxy(t, upstream, `{}`)
	for i := range 20 {
		if c := answer(p, http.MethodOptions, fmt.Sprintf("/api/v1/namespaces/a/preflight-%d", i)); c != http.StatusNoContent {
			t.Fatalf("preflight: %d, want the upstream's 204", c)
		}
		if c := answer(p, http.MethodGet, fmt.Sprintf("/api/v1/namespaces/a/redirected-%d/x", i)); c != http.StatusFound {
			t.Fatalf("get: %d, want the upstream's 302", c)
		}
	}
	answer(p, http.MethodGet, "/api/v1/namespaces/a/preflight-0/x")
	want := []string{
		"cluster=@host code=204 resource=@unknown verb=@other",
		"cluster=@host code=302 resource=@unknown verb=get",
	}
	if got := labelSets(t, p.metrics.requests); !slices.Equal(got, want) {
		t.Errorf("fedmesh_proxy_requests_total series %q, want %q", got, want)
	}
}

// labelSets lists a collector's series by their labels ("name=value", sorted by name), sorted.
func labelSets(t *testing.T, c prometheus.Collector) []string {
	t.Helper()
	return slices.Sorted(maps.Keys(collected(t, c)))
}

// The ownership gauges show what the proxy enforces, not what its store holds: with a lease, nothing before the
// first contact with the manager (the stored configuration may have been handed on meanwhile) and nothing once
// contact was lost for the lease, when every write is fenced and /readyz fails; an ownership taken in meanwhile
// shows only once contact returns.
func TestOwnershipGaugesFollowTheLease(t *testing.T) {
	upstream := listUpstream(t, nil)
	store, err := config.NewStore("")
	if err != nil {
		t.Fatal(err)
	}
	own := func(epoch int, set shard.Set) {
		t.Helper()
		doc := fmt.Sprintf(`{"epoch": %d, "shard": 0, "assignment": {"0": %q}}`, epoch, set.String())
		if err := store.Apply(config.KindOwnership, strconv.Itoa(epoch), []byte(doc)); err != nil {
			t.Fatal(err)
		}
	}
	own(3, shard.Full())
	p, err := New(Options{Host: &rest.Config{Host: upstream.URL}, Store: store, OwnershipLease: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	expireLease := func() { // as the lease's timer does, an hour after contact was lost
		p.Contact(false)
		p.lease.mu.Lock()
		current := p.lease.contacts
		p.lease.mu.Unlock()
		p.leaseExpired(current)
	}
	half := shard.NewSet(shard.Range{First: 0, Last: 1<<63 - 1})
	for _, step := range []struct {
		name     string
		do       func()
		ready    bool
		epoch    float64
		fraction float64
	}{
		{name: "started, before any contact", do: func() {}, epoch: 0, fraction: 0},
		{name: "in contact", do: func() { p.Contact(true) }, ready: true, epoch: 3, fraction: 1},
		{name: "a new ownership in contact", do: func() { own(4, half) }, ready: true, epoch: 4, fraction: 0.5},
		{name: "out of contact for the lease", do: expireLease, epoch: 0, fraction: 0},
		{name: "a new ownership out of contact", do: func() { own(5, shard.Full()) }, epoch: 0, fraction: 0},
		{name: "in contact again", do: func() { p.Contact(true) }, ready: true, epoch: 5, fraction: 1},
	} {
		step.do()
		if p.Ready() != step.ready {
			t.Fatalf("%s: ready %v, want %v", step.name, p.Ready(), step.ready)
		}
		epoch, fraction := value(t, p.metrics.epoch), value(t, p.metrics.ownedShare)
		if epoch != step.epoch || fraction != step.fraction {
			t.Errorf("%s: fedmesh_proxy_ownership_epoch %v, fedmesh_proxy_owned_fraction %v; want %v, %v",
				step.name, epoch, fraction, step.epoch, step.fraction)
		}
	}
}
