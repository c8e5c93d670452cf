package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fedmesh/fedmesh/pkg/proxy/config"
)

// A relayed watch (nothing to filter: its events are not decoded) still ends at an event boundary when the
// ownership changes: the events before it pass whole, a half-sent event is not passed at all, and the 410 ERROR
// event comes last. Events reach the proxy split across writes, as they do over TCP.
func TestRelayedWatchEndsBetweenEvents(t *testing.T) {
	event := func(name string) string {
		return `{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"` + name + `","namespace":"a"}}}` + "\n"
	}
	first, second := event("first"), event("second")
	ended := make(chan struct{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		flush := w.(http.Flusher).Flush
		for _, part := range []string{first[:10], first[10:40], first[40:] + second[:30]} {
			io.WriteString(w, part)
			flush()
			time.Sleep(10 * time.Millisecond)
		}
		select { // the rest of the second event never comes before the watch ends
		case <-ended:
		case <-r.Context().Done():
		}
	}))
	defer upstream.Close()
	p := newOwningProxy(t, upstream)
	srv := httptest.NewServer(p)
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/api/v1/namespaces/a/pods?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewReader(resp.Body)
	if got, err := lines.ReadString('\n'); got != first || err != nil {
		t.Fatalf("first event %q, %v; want %q", got, err, first)
	}
	time.Sleep(50 * time.Millisecond) // let the half of the second event reach the proxy
	if n := p.watches.endStale(nil, func([]servedKey) {}); n != 1 {
		t.Fatalf("ended %d watches, want 1", n)
	}
	close(ended)
	rest, err := io.ReadAll(lines)
	if err != nil {
		t.Fatal(err)
	}
	var ev struct {
		Type   string
		Object struct{ Code int }
	}
	if err := json.Unmarshal(rest, &ev); err != nil || ev.Type != "ERROR" || ev.Object.Code != http.StatusGone ||
		strings.Count(string(rest), "\n") != 1 {
		t.Errorf("after the first event: %q (%v), want one 410 ERROR event", rest, err)
	}
	if got := value(t, p.metrics.watchEvents.WithLabelValues("pods", "relayed", HostCluster)); got != 1 {
		t.Errorf("relayed events counted: %v, want 1", got)
	}
}

// writeRecorder is a ResponseWriter that hands on each write.
type writeRecorder struct {
	header http.Header
	writes chan string
}

func (w *writeRecorder) Header() http.Header         { return w.header }
func (w *writeRecorder) WriteHeader(int)             {}
func (w *writeRecorder) Write(p []byte) (int, error) { w.writes <- string(p); return len(p), nil }
func (w *writeRecorder) Flush()                      {}

// Events that reach the proxy together leave it in one write, as the API server writes a burst (it flushes only
// when no event is queued); an event that comes alone leaves at once, not held for a next one.
func TestRelayedBurstLeavesInOneWrite(t *testing.T) {
	event := func(name string) string {
		return `{"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"` + name + `","namespace":"a"}}}` + "\n"
	}
	burst, lone := event("a")+event("b")+event("c"), event("d")
	more := make(chan struct{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, burst)
		w.(http.Flusher).Flush()
		<-more
		io.WriteString(w, lone)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer upstream.Close()
	defer close(more)
	p := newOwningProxy(t, upstream)
	w := &writeRecorder{header: http.Header{}, writes: make(chan string, 10)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/a/pods?watch=true", nil).WithContext(ctx))
	next := func() string {
		select {
		case got := <-w.writes:
			return got
		case <-time.After(5 * time.Second):
			t.Fatal("no write from the proxy")
			return ""
		}
	}
	if got := next(); got != burst {
		t.Errorf("first write %q, want the whole burst %q", got, burst)
	}
	more <- struct{}{}
	if got := next(); got != lone {
		t.Errorf("then %q, want %q", got, lone)
	}
}

// A change ends the watches it makes stale and takes in their keys first; a watch ended already (a 410 refusal on its
// way out, a watch ended by an earlier change) is neither ended again nor taken in: the fence remembers the key of a
// watch an earlier change ended (relistFence).
func TestEndStaleCountsOnlyTheWatchesItEnds(t *testing.T) {
	w := newWatches()
	never := func(*config.Ownership) bool { return false }
	idle := func(bool) ([]byte, error) { return nil, nil }
	open := w.track(io.NopCloser(strings.NewReader("")), idle, nil, servedKey{namespace: "open"}, never, false)
	refused := w.track(io.NopCloser(strings.NewReader("")), idle, nil, servedKey{}, never, false)
	refused.end()
	closing := w.track(io.NopCloser(strings.NewReader("")), idle, nil, servedKey{namespace: "closing"}, never, false)
	closing.end() // by an earlier change; its handler has not closed it yet
	var taken []string
	n := w.endStale(nil, func(stale []servedKey) {
		if open.isEnded() {
			t.Error("the stale watch was ended before its key was taken in")
		}
		for _, k := range stale {
			taken = append(taken, k.namespace)
		}
	})
	slices.Sort(taken)
	if n != 1 || !slices.Equal(taken, []string{"open"}) || !open.isEnded() {
		t.Errorf("ended %d watches, keys %q (open ended: %v); want the open watch's alone", n, taken, open.isEnded())
	}
}

// A resource's change of scope ends the watches across namespaces of that resource on that cluster served under the
// old scope, and takes in their keys; a watch of another resource, group or cluster, one already in the new scope,
// and one in a namespace (which took no scope from discovery) go on.
func TestEndRescopedEndsOnlyWatchesServedUnderTheOldScope(t *testing.T) {
	w := newWatches()
	always := func(*config.Ownership) bool { return true }
	idle := func(bool) ([]byte, error) { return nil, nil }
	widgets := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	watch := func(key servedKey, namespaced bool) *relistingBody {
		return w.track(io.NopCloser(strings.NewReader("")), idle, nil, key, always, namespaced)
	}
	stale := watch(servedKey{cluster: "m1", resource: widgets, labelSelector: "stale"}, false)
	goOn := map[string]*relistingBody{
		"already namespaced": watch(servedKey{cluster: "m1", resource: widgets}, true),
		"in a namespace":     watch(servedKey{cluster: "m1", resource: widgets, namespace: "a"}, false),
		"another cluster":    watch(servedKey{cluster: "m2", resource: widgets}, false),
		"another group":      watch(servedKey{cluster: "m1", resource: schema.GroupResource{Group: "other.com", Resource: "widgets"}}, false),
		"another resource":   watch(servedKey{cluster: "m1", resource: schema.GroupResource{Group: "example.com", Resource: "gadgets"}}, false),
	}
	var taken []servedKey
	n := w.endRescoped("m1", "example.com", map[string]bool{"widgets": true}, func(k servedKey) {
		if stale.isEnded() {
			t.Error("the watch was ended before its key was taken in")
		}
		taken = append(taken, k)
	})
	if n != 1 || len(taken) != 1 || taken[0].labelSelector != "stale" || !stale.isEnded() {
		t.Errorf("ended %d watches, keys %+v (stale ended: %v); want the one served cluster-scoped alone", n, taken, stale.isEnded())
	}
	for name, b := range goOn {
		if b.isEnded() {
			t.Errorf("the watch of %s was ended", name)
		}
	}
}
