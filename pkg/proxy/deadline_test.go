package proxy

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/pkg/shard"
)

func TestWriteDeadline(t *testing.T) {
	now := time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		duration time.Duration
		ends     time.Time
		want     time.Time
	}{
		{"no lease: no deadline", 0, time.Time{}, time.Time{}},
		{"in contact: a lease from now", 30 * time.Second, time.Time{}, now.Add(30 * time.Second)},
		{"out of contact: the lease's end", 30 * time.Second, now.Add(4 * time.Second), now.Add(4 * time.Second)},
		{"out of contact, lease run out: already past", 30 * time.Second, now.Add(-time.Second), now.Add(-time.Second)},
	} {
		if got := writeDeadline(tc.duration, tc.ends, now); !got.Equal(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A write the proxy lets through out of contact with the manager is given up when the ownership lease ends: the
// API server is asked to stop by then (timeout), and the proxy cancels it then and answers 504.
func TestWriteOutOfContactEndsWithTheLease(t *testing.T) {
	timeouts := make(chan string, 2)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // so that the server notices the proxy giving up
		timeouts <- r.URL.Query().Get("timeout")
		<-r.Context().Done() // a webhook that never answers
	}))
	t.Cleanup(upstream.Close)
	p := newOwningProxy(t, upstream)
	// A breaker that opens at the first failure: the proxy's own giving up must not be one.
	if err := p.store.Apply(config.KindTraffic, "t1", []byte("circuitBreakers: [{name: all, consecutiveFailures: 1, openTimeout: 1h}]\n")); err != nil {
		t.Fatal(err)
	}
	p.lease.duration = 500 * time.Millisecond
	p.Contact(true)
	p.Contact(false)
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)

	start := time.Now()
	client := &http.Client{Timeout: 10 * time.Second} // the old code held the write forever
	resp, err := client.Post(srv.URL+"/api/v1/namespaces/a/configmaps", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusGatewayTimeout || !strings.Contains(string(body), `"reason":"Timeout"`) {
		t.Errorf("a write outlasting the lease: %d %s, want 504 Timeout", resp.StatusCode, body)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("answered after %v, want about the lease's 500ms", took)
	}
	asked, err := time.ParseDuration(<-timeouts)
	if err != nil || asked <= 0 || asked > 500*time.Millisecond {
		t.Errorf("the API server was asked for timeout %v (%v), want within the lease's 500ms", asked, err)
	}

	// A caller's own shorter timeout is kept (in contact again: the lease has run out meanwhile).
	p.Contact(true)
	resp, err = client.Post(srv.URL+"/api/v1/namespaces/a/configmaps?timeout=100ms", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusServiceUnavailable {
		t.Fatal("the breaker opened: the proxy's own deadline counted as the upstream's failure")
	}
	if got := <-timeouts; got != "100ms" {
		t.Errorf("the caller's timeout=100ms became %q", got)
	}
}

// An exec session is fenced like a write but holds up neither an ownership change nor the writes after it: it
// changes no object and may stay open for hours.
func TestExecHoldsUpNoOwnershipChange(t *testing.T) {
	execOpen := make(chan struct{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/exec") {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c"}}`)
			return
		}
		conn, rw, ok := switchProtocols(t, w)
		if !ok {
			return
		}
		defer conn.Close()
		close(execOpen)
		rw.ReadString('\n') // the session lasts until the client ends it
	}))
	t.Cleanup(upstream.Close)
	full := `{"epoch":1,"shard":0,"assignment":{"0":"` + shard.Full().String() + `"}}`
	p, store := proxyOwning(t, upstream, full)
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)

	openExec(t, srv.URL, "Bearer caller")
	<-execOpen

	applied := make(chan error, 1)
	go func() {
		other := shard.NamespaceHash("b") // namespace b moves to shard 1; a stays
		moved := shard.NewSet(shard.Range{First: other, Last: other})
		applied <- store.Apply(config.KindOwnership, "2", []byte(fmt.Sprintf(`{"epoch":2,"shard":0,"assignment":{"0":%q,"1":%q}}`,
			moved.Complement(), moved)))
	}()
	select {
	case err := <-applied:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("an open exec session holds up the ownership change")
	}
	resp, err := http.Post(srv.URL+"/api/v1/namespaces/a/configmaps", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a write while an exec session is open: %s", resp.Status)
	}
}

// A write that comes when the lease has run out, its timer not fired yet, is fenced as under a lapsed lease.
func TestWriteWithNoLeaseLeftIsFenced(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("forwarded %s %s with no lease left", r.Method, r.URL.Path)
	}))
	t.Cleanup(upstream.Close)
	p := newOwningProxy(t, upstream)
	p.lease.duration = time.Hour
	p.Contact(true)
	p.Contact(false)
	p.lease.mu.Lock()
	p.lease.ends = time.Now().Add(-time.Millisecond) // as if the timer were late
	p.lease.mu.Unlock()
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Post(srv.URL+"/api/v1/namespaces/a/configmaps", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a write with no lease left: %d %s, want 403 as under a lapsed lease", resp.StatusCode, body)
	}
}
