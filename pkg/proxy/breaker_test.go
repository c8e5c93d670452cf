package proxy

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"

	"github.com/fedmesh/fedmesh/pkg/breaker"
	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/pkg/shard"
)

// breakerProxy fronts upstream as shard 0, which owns every namespace but "b", under the traffic policy given.
func breakerProxy(t *testing.T, upstream *httptest.Server, traffic string) (*Proxy, *config.Store) {
	t.Helper()
	store, err := config.NewStore("")
	if err != nil {
		t.Fatal(err)
	}
	b := shard.Point(shard.NamespaceHash("b"))
	if err := store.Apply(config.KindOwnership, "1", []byte(`{"shard": 0, "assignment": {"0": "`+shard.Full().Difference(b).String()+`", "1": "`+b.String()+`"}}`)); err != nil {
		t.Fatal(err)
	}
	if err := store.Apply(config.KindTraffic, "t1", []byte(traffic)); err != nil {
		t.Fatal(err)
	}
	p, err := New(Options{Host: &rest.Config{Host: upstream.URL}, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	return p, store
}

func answer(p *Proxy, method, path string) int {
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`)))
	return rec.Code
}

// An answer the proxy gives itself (here the fence's 403) says nothing of the upstream: a half-open breaker's probe
// that never went upstream must not close the breaker.
func TestLocalAnswerIsNoBreakerProbe(t *testing.T) {
	var hits atomic.Int32
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "etcd down", http.StatusInternalServerError)
	}))
	defer upstream.Close()
	p, _ := breakerProxy(t, upstream, `{"circuitBreakers":[{"name":"host","consecutiveFailures":1,"openTimeout":"200ms"}]}`)
	if c := answer(p, "GET", "/api/v1/namespaces/a/configmaps/x"); c != http.StatusInternalServerError {
		t.Fatalf("first GET: %d, want the upstream's 500", c)
	}
	if c := answer(p, "GET", "/api/v1/namespaces/a/configmaps/x"); c != http.StatusServiceUnavailable {
		t.Fatalf("second GET: %d, want 503 from the open breaker", c)
	}
	time.Sleep(300 * time.Millisecond) // past the open timeout: the next request is the half-open probe
	if c := answer(p, "POST", "/api/v1/namespaces/b/configmaps"); c != http.StatusForbidden {
		t.Fatalf("write to another shard's namespace: %d, want the fence's 403", c)
	}
	for _, b := range p.engine.Breakers() {
		if b.State == breaker.BreakerClosed {
			t.Errorf("breaker %s/%s closed by a write the proxy answered itself (upstream hit %d times, failing each)", b.Rule, b.Cluster, hits.Load())
		}
	}
	// The probe slot is free again: the next request to go upstream is the probe, and its failure reopens.
	if c := answer(p, "GET", "/api/v1/namespaces/a/configmaps/x"); c != http.StatusInternalServerError {
		t.Fatalf("GET after the fenced write: %d, want the probe to reach the upstream's 500", c)
	}
	if got := p.engine.Breakers(); len(got) != 1 || got[0].State != breaker.BreakerOpen {
		t.Errorf("breakers after the failed probe: %+v, want open", got)
	}
}

// A TrafficPolicy push that replaces a breaker's rule starts it closed, and the gauge says so; one that removes the
// rule removes its series.
func TestBreakerGaugeFollowsPolicyChanges(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail.Load() {
			http.Error(w, "etcd down", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x","namespace":"a"}}`))
	}))
	defer upstream.Close()
	p, store := breakerProxy(t, upstream, `{"circuitBreakers":[{"name":"host","consecutiveFailures":1,"openTimeout":"10m"}]}`)
	answer(p, "GET", "/api/v1/namespaces/a/configmaps/x")
	if got := value(t, p.metrics.breakerState.WithLabelValues("host", HostCluster)); got != 2 {
		t.Fatalf("gauge %v after a failure, want 2 (open)", got)
	}
	fail.Store(false)
	if err := store.Apply(config.KindTraffic, "t2", []byte(`{"circuitBreakers":[{"name":"host","consecutiveFailures":3,"openTimeout":"10m"}]}`)); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if c := answer(p, "GET", "/api/v1/namespaces/a/configmaps/x"); c != http.StatusOK {
			t.Fatalf("GET after the push: %d, want 200", c)
		}
	}
	if got := value(t, p.metrics.breakerState.WithLabelValues("host", HostCluster)); got != 0 {
		t.Errorf("fedmesh_proxy_breaker_state{rule=host,cluster=@host} = %v while the breaker is closed and requests pass, want 0", got)
	}

	fail.Store(true)
	answer(p, "GET", "/api/v1/namespaces/a/configmaps/x")
	answer(p, "GET", "/api/v1/namespaces/a/configmaps/x")
	answer(p, "GET", "/api/v1/namespaces/a/configmaps/x")
	if got := value(t, p.metrics.breakerState.WithLabelValues("host", HostCluster)); got != 2 {
		t.Fatalf("gauge %v after three failures, want 2 (open)", got)
	}
	if err := store.Apply(config.KindTraffic, "t3", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if n := series(p.metrics.breakerState); n != 0 {
		t.Errorf("%d breaker_state series left after the policy removed every breaker, want none", n)
	}
}

// A request naming a cluster the proxy does not know is answered 404 before the traffic policy sees it: no breaker
// is kept for every name a caller makes up.
func TestUnknownClusterGetsNoBreaker(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer upstream.Close()
	p, _ := breakerProxy(t, upstream, `{"circuitBreakers":[{"name":"members","consecutiveFailures":1,"openTimeout":"10m"}]}`)
	for _, name := range []string{"made-up-1", "made-up-2"} {
		if c := answer(p, "GET", "/clusters/"+name+"/api/v1/namespaces/a/configmaps/x"); c != http.StatusNotFound {
			t.Fatalf("GET on cluster %s: %d, want 404", name, c)
		}
	}
	if got := p.engine.Breakers(); len(got) != 0 {
		t.Errorf("breakers %+v after requests to unknown clusters, want none", got)
	}
	if n := series(p.metrics.requests); n != 1 {
		t.Errorf("%d series of fedmesh_proxy_requests_total after requests to two unknown clusters, want 1 (%s)", n, UnknownCluster)
	}
}

// series counts the series a collector has.
func series(c prometheus.Collector) int {
	ch := make(chan prometheus.Metric)
	go func() { c.Collect(ch); close(ch) }()
	n := 0
	for range ch {
		n++
	}
	return n
}
