package proxy

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
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

// A member cluster that leaves the federation takes with it what the proxy kept of it: its breakers, their
// fedmesh_proxy_breaker_state series (which would otherwise report an open breaker for a cluster no longer there),
// and what discovery told of it. Should it come back, its breaker starts closed.
func TestUnjoinedClusterTakesItsBreakers(t *testing.T) {
	member := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"kind":"APIResourceList","groupVersion":"v1","resources":[{"name":"nodes","namespaced":false,"kind":"Node","verbs":["get"]}]}`))
			return
		}
		http.Error(w, "member down", http.StatusInternalServerError)
	}))
	defer member.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: member.Certificate().Raw})
	host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer host.Close()

	store, err := config.NewStore("")
	if err != nil {
		t.Fatal(err)
	}
	version := 0
	ownWith := func(clusters ...config.Cluster) {
		t.Helper()
		cs, err := json.Marshal(clusters)
		if err != nil {
			t.Fatal(err)
		}
		version++
		doc := `{"shard": 0, "assignment": {"0": "` + shard.Full().String() + `"}, "clusters": ` + string(cs) + `}`
		if err := store.Apply(config.KindOwnership, fmt.Sprint(version), []byte(doc)); err != nil {
			t.Fatal(err)
		}
	}
	ownWith()
	if err := store.Apply(config.KindTraffic, "t1", []byte(`{"circuitBreakers":[{"name":"members","consecutiveFailures":1,"openTimeout":"10m"}]}`)); err != nil {
		t.Fatal(err)
	}
	p, err := New(Options{Host: &rest.Config{Host: host.URL}, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	stays := config.Cluster{Name: "stays", Server: member.URL, CAData: ca}
	for _, name := range []string{"member-0", "member-1", "member-0"} {
		ownWith(stays, config.Cluster{Name: name, Server: member.URL, CAData: ca})
		answer(p, "GET", "/clusters/stays/api/v1/nodes/x") // opens stays's breaker, or finds it open
		// A cluster-scoped read: the proxy reads the member's discovery, then the member fails it.
		if c := answer(p, "GET", "/clusters/"+name+"/api/v1/nodes/x"); c != http.StatusInternalServerError {
			t.Fatalf("GET on %s: %d, want the member's 500 through a closed breaker", name, c)
		}
		if c := answer(p, "GET", "/clusters/"+name+"/api/v1/nodes/x"); c != http.StatusServiceUnavailable {
			t.Fatalf("second GET on %s: %d, want 503 from its open breaker", name, c)
		}
		ownWith(stays) // name unjoined
		if c := answer(p, "GET", "/clusters/"+name+"/api/v1/nodes/x"); c != http.StatusNotFound {
			t.Fatalf("GET on unjoined %s: %d, want 404", name, c)
		}
		if got := p.engine.Breakers(); len(got) != 1 || got[0].Cluster != "stays" || got[0].State != breaker.BreakerOpen {
			t.Errorf("breakers after %s left: %+v, want only stays's, open", name, got)
		}
		if n := series(p.metrics.breakerState); n != 1 {
			t.Errorf("%d fedmesh_proxy_breaker_state series after %s left, want 1 (stays)", n, name)
		}
		if got := value(t, p.metrics.breakerState.WithLabelValues("members", "stays")); got != 2 {
			t.Errorf("breaker state of stays = %v, want 2 (open): another cluster's leaving is none of its business", got)
		}
		p.scopes.mu.Lock()
		for k := range p.scopes.known {
			if k.cluster == name {
				t.Errorf("discovery of %s kept after it left: %v", name, k)
			}
		}
		p.scopes.mu.Unlock()
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
