package proxy

import (
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/pkg/shard"
	"github.com/fedmesh/fedmesh/test/egress"
)

// A response the caller does not read holds at most the stream window in the proxy: the API server's writes stop
// there, not at x/net's default of 4 MiB.
func TestUpstreamBuffersOneStreamWindow(t *testing.T) {
	const body = 16 << 20
	var written atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := make([]byte, 16<<10)
		for written.Load() < body {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			written.Add(int64(len(chunk)))
			w.(http.Flusher).Flush()
		}
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)

	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	u, err := newUpstream("", &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/pods", nil)
	resp, err := u.transport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.ProtoMajor != 2 {
		t.Fatalf("the upstream spoke %s, want HTTP/2", resp.Proto)
	}

	// Nothing is read: the server writes until flow control stops it, then stays there.
	var last int64 = -1
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		n := written.Load()
		if n == last {
			break
		}
		last = n
	}
	// The server's own write buffers add some KiB to the window.
	if last < upstreamStreamWindow/2 || last > upstreamStreamWindow+256<<10 {
		t.Fatalf("the server wrote %d bytes nobody read, want about the stream window (%d)", last, upstreamStreamWindow)
	}
}

// A new configuration keeps the upstream (and so the connections) of a member whose address and CA are unchanged,
// and makes a new one for a member that moved.
func TestMemberUpstreamKeptAcrossConfigurations(t *testing.T) {
	host := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(host.Close)
	p := newOwningProxy(t, host)
	apply := func(version, aServer string) (a, b *upstream) {
		t.Helper()
		doc := `{"shard": 0, "assignment": {"0": "` + shard.Full().String() + `"}, "clusters": [` +
			`{"name": "a", "server": "` + aServer + `"}, {"name": "b", "server": "https://127.0.0.1:7002"}]}`
		if err := p.store.Apply(config.KindOwnership, version, []byte(doc)); err != nil {
			t.Fatal(err)
		}
		a, _ = p.upstreamFor("a")
		b, _ = p.upstreamFor("b")
		if a == nil || b == nil {
			t.Fatalf("version %s: members a %v, b %v", version, a, b)
		}
		return a, b
	}
	a1, b1 := apply("2", "https://127.0.0.1:7001")
	a2, b2 := apply("3", "https://127.0.0.1:7001")
	if a2 != a1 || b2 != b1 {
		t.Errorf("an unchanged configuration made new upstreams")
	}
	a3, b3 := apply("4", "https://127.0.0.1:7003")
	if a3 == a2 || a3.host != "https://127.0.0.1:7003" {
		t.Errorf("member a moved to %s, its upstream still goes to %s", "https://127.0.0.1:7003", a3.host)
	}
	if b3 != b2 {
		t.Errorf("member b did not change but got a new upstream")
	}
}

// A member behind an egress proxy is reached through it: CONNECT to the Cluster's proxyURL with its proxyHeader,
// the member's CA verified through the tunnel. A changed header makes a new upstream that sends it.
func TestMemberReachedThroughItsProxy(t *testing.T) {
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"major":"1","minor":"36"}`)
	}))
	t.Cleanup(api.Close)
	proxy := egress.Start(t, "s3cret")
	host := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(host.Close)
	p := newOwningProxy(t, host)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: api.Certificate().Raw})

	get := func(version, token string) (int, string) {
		t.Helper()
		doc, err := json.Marshal(config.Ownership{Assignment: shard.Assignment{0: shard.Full()}, Clusters: []config.Cluster{{
			Name: "m", Server: api.URL, CAData: ca, ProxyURL: proxy.URL, ProxyHeader: map[string]string{"x-proxy-token": token}}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.store.Apply(config.KindOwnership, version, doc); err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/clusters/m/version", nil))
		return rec.Code, rec.Body.String()
	}
	if code, body := get("2", "s3cret"); code != http.StatusOK || !strings.Contains(body, `"minor":"36"`) {
		t.Errorf("through the egress proxy: %d %s, want the member's version", code, body)
	}
	if code, body := get("3", "stale"); code != http.StatusBadGateway || strings.Contains(body, "stale") {
		t.Errorf("with a header the egress proxy refuses: %d %s, want 502 naming no header value", code, body)
	}
	var seen []string
	for _, r := range proxy.Requests() {
		seen = append(seen, r.Method+" "+r.Host+" "+r.Header.Get(egress.TokenHeader))
	}
	apiHost := strings.TrimPrefix(api.URL, "https://")
	if want := []string{"CONNECT " + apiHost + " s3cret", "CONNECT " + apiHost + " stale"}; !slices.Equal(seen, want) {
		t.Errorf("the egress proxy saw %q, want %q", seen, want)
	}
}

// A member served under a path prefix (as a management proxy serves its clusters: https://host/k8s/clusters/c-1)
// gets every request under that prefix: discovery, the requests forwarded, and the lists the proxy filters.
func TestMemberServedUnderAPathPrefix(t *testing.T) {
	const prefix = "/k8s/clusters/c-1"
	var mu sync.Mutex
	var outside []string
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path, ok := strings.CutPrefix(r.URL.Path, prefix)
		if !ok {
			mu.Lock()
			outside = append(outside, r.Method+" "+r.URL.Path)
			mu.Unlock()
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch path {
		case "/version":
			_, _ = io.WriteString(w, `{"major":"1","minor":"36"}`)
		case "/api/v1":
			_, _ = io.WriteString(w, `{"kind":"APIResourceList","groupVersion":"v1","resources":[{"name":"pods","namespaced":true,"kind":"Pod","verbs":["get","list"]}]}`)
		case "/api/v1/pods":
			_, _ = io.WriteString(w, `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9"},"items":[]}`)
		default:
			_, _ = io.WriteString(w, `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"team-a"}}`)
		}
	}))
	t.Cleanup(api.Close)
	host := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(host.Close)
	p := newOwningProxy(t, host)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: api.Certificate().Raw})
	lower := shard.NewSet(shard.Range{First: 0, Last: 1<<63 - 1})
	doc, err := json.Marshal(config.Ownership{Epoch: 1, Assignment: shard.Assignment{0: lower, 1: lower.Complement()},
		Clusters: []config.Cluster{{Name: "m", Server: api.URL + prefix, CAData: ca}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.store.Apply(config.KindOwnership, "2", doc); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/version", "/api/v1/namespaces/team-a/pods/p", "/api/v1/pods"} {
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/clusters/m"+path, nil))
		if rec.Code != http.StatusOK {
			t.Errorf("GET %s of the member: %d %s", path, rec.Code, rec.Body)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(outside) > 0 {
		t.Errorf("the member was asked outside its prefix %s: %q", prefix, outside)
	}
}
