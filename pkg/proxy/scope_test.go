package proxy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/fedmesh/fedmesh/pkg/shard"
)

// widgetUpstream serves discovery of example.com/v1 widgets in a scope that can change (a CRD deleted and recreated
// with the other scope), answers a list of widgets with items, and every other request with a Widget, recording it.
type widgetUpstream struct {
	namespaced  atomic.Bool
	discoveries atomic.Int32
	mu          sync.Mutex
	items       []map[string]any
	seen        []string
}

func (f *widgetUpstream) start(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/apis/example.com/v1" {
			f.discoveries.Add(1)
			_ = json.NewEncoder(w).Encode(metav1.APIResourceList{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{
				{Name: "widgets", Kind: "Widget", Namespaced: f.namespaced.Load(), Verbs: []string{"create", "list", "get"}}}})
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.seen = append(f.seen, r.Method+" "+r.URL.Path)
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/widgets") {
			_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "example.com/v1", "kind": "WidgetList",
				"metadata": map[string]any{"resourceVersion": "10"}, "items": f.items})
			return
		}
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusCreated)
		}
		_, _ = io.WriteString(w, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"}}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func (f *widgetUpstream) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...)
}

func (f *widgetUpstream) setItems(items ...map[string]any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.items = items
}

// halvesOf is the 2-shard ownership document of shard id: shard 0 owns the lower half of the hash space and
// cluster-scoped objects, shard 1 the upper half; widgets are sharded, filtered by the proxy.
func halvesOf(id int) string {
	lower := shard.NewSet(shard.Range{First: 0, Last: 1<<63 - 1})
	return fmt.Sprintf(`{"epoch":1,"shard":%d,"clusterScopedShard":0,"filterMode":"client","resources":[{"group":"example.com","resource":"widgets"}],"assignment":{"0":%q,"1":%q}}`,
		id, lower, lower.Complement())
}

// testClock is a clock a test moves by hand.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// widgetProxy is a proxy of shard id in front of upstream, its scopes read on clock.
func widgetProxy(t *testing.T, upstream *httptest.Server, id int, clock *testClock) *Proxy {
	t.Helper()
	p, _ := proxyOwning(t, upstream, halvesOf(id))
	p.scopes.now = clock.Now
	return p
}

func send(p *Proxy, method, path, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	p.ServeHTTP(w, r)
	return w
}

func listedWidgets(t *testing.T, p *Proxy) []string {
	t.Helper()
	w := send(p, http.MethodGet, "/apis/example.com/v1/widgets", "")
	var list struct {
		Items []metav1.PartialObjectMetadata `json:"items"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &list); w.Code != http.StatusOK || err != nil {
		t.Fatalf("list of widgets: %d %s", w.Code, w.Body)
	}
	var names []string
	for _, it := range list.Items {
		names = append(names, it.Namespace+"/"+it.Name)
	}
	return names
}

const widgetBody = `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"}}`

// A write that names no namespace acts on a cluster-scoped object, whatever the proxy learned of its resource: the
// namespace "" is no namespace of a shard's. So a CRD recreated cluster-scoped (scope is immutable: an operator's
// upgrade that changes it deletes and recreates the CRD) is written only by the shard that owns cluster-scoped
// objects, even by a proxy that learned it namespaced.
func TestWriteWithoutNamespaceIsFencedAsClusterScoped(t *testing.T) {
	widgets := &widgetUpstream{}
	widgets.namespaced.Store(true)
	upstream := widgets.start(t)
	clock := &testClock{now: time.Unix(1000, 0)}
	shard1 := widgetProxy(t, upstream, 1, clock)
	shard0 := widgetProxy(t, upstream, 0, clock)
	for _, p := range []*Proxy{shard0, shard1} {
		listedWidgets(t, p) // each learns widgets are namespaced
	}
	widgets.namespaced.Store(false)

	before := len(widgets.requests())
	if w := send(shard1, http.MethodPost, "/apis/example.com/v1/widgets", widgetBody); w.Code != http.StatusForbidden {
		t.Errorf("shard 1 creating a Widget without a namespace: %d %s, want 403 (the API server was asked %q)", w.Code, w.Body, widgets.requests()[before:])
	}
	if w := send(shard1, http.MethodDelete, "/apis/example.com/v1/widgets", ""); w.Code != http.StatusForbidden {
		t.Errorf("shard 1 deleting the collection of Widgets without a namespace: %d, want 403", w.Code)
	}
	if w := send(shard1, http.MethodDelete, "/apis/example.com/v1/widgets/w", ""); w.Code != http.StatusForbidden {
		t.Errorf("shard 1 deleting a Widget without a namespace: %d, want 403", w.Code)
	}
	if w := send(shard0, http.MethodPost, "/apis/example.com/v1/widgets", widgetBody); w.Code != http.StatusCreated {
		t.Errorf("shard 0, which owns cluster-scoped objects, creating a Widget without a namespace: %d %s, want it passed", w.Code, w.Body)
	}
}

// A resource's scope is read from discovery again once it is a while old, and at once (nearly) when the API server
// answers a request in the other scope: a CRD recreated namespaced is then listed as a namespaced resource, its
// objects narrowed to the shard's namespaces, not shown whole to the shard of cluster-scoped objects.
func TestRecreatedCRDIsListedInItsNewScope(t *testing.T) {
	lower := shard.NewSet(shard.Range{First: 0, Last: 1<<63 - 1})
	_, theirs := namespacesIn(lower) // shard 1's
	for _, tc := range []struct {
		name string
		// learn makes the proxy of shard 0 learn the new scope, or not: the clock moves, a request is answered.
		learn func(p *Proxy, clock *testClock)
		want  []string
	}{
		{"within the bound", func(p *Proxy, clock *testClock) { clock.step(scopeBound / 2) }, []string{theirs + "/w"}},
		{"after the bound", func(p *Proxy, clock *testClock) { clock.step(scopeBound) }, nil},
		{"after a namespaced request the API server answered", func(p *Proxy, clock *testClock) {
			clock.step(scopeRecheckMin)
			if w := send(p, http.MethodGet, "/apis/example.com/v1/namespaces/"+theirs+"/widgets/w", ""); w.Code != http.StatusOK {
				t.Fatalf("get of a widget in %s: %d %s", theirs, w.Code, w.Body)
			}
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			widgets := &widgetUpstream{}
			upstream := widgets.start(t)
			clock := &testClock{now: time.Unix(1000, 0)}
			shard0 := widgetProxy(t, upstream, 0, clock)
			listedWidgets(t, shard0) // learns widgets are cluster-scoped
			widgets.namespaced.Store(true)
			widgets.setItems(map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w", "namespace": theirs}})
			tc.learn(shard0, clock)
			if got := listedWidgets(t, shard0); strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("shard 0 lists widgets %q, want %q", got, tc.want)
			}
		})
	}
}

// Discovery is read once per group version within the bound, however many requests look the scope up; after the
// bound, once again.
func TestScopesReadOncePerBound(t *testing.T) {
	widgets := &widgetUpstream{}
	upstream := widgets.start(t)
	clock := &testClock{now: time.Unix(1000, 0)}
	p := widgetProxy(t, upstream, 0, clock)
	for range 5 {
		listedWidgets(t, p)
		send(p, http.MethodPost, "/apis/example.com/v1/widgets", widgetBody)
	}
	if n := widgets.discoveries.Load(); n != 1 {
		t.Errorf("discovery read %d times within the bound, want once", n)
	}
	clock.step(scopeBound)
	for range 5 {
		listedWidgets(t, p)
	}
	if n := widgets.discoveries.Load(); n != 2 {
		t.Errorf("discovery read %d times in all after the bound, want twice", n)
	}
}

// A scope that discovery cannot be asked for again stays what it told last, rather than failing the request.
func TestScopeKeptWhileDiscoveryFails(t *testing.T) {
	var failing atomic.Bool
	widgets := &widgetUpstream{}
	inner := widgets.start(t)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() && r.URL.Path == "/apis/example.com/v1" {
			http.Error(w, "discovery is down", http.StatusServiceUnavailable)
			return
		}
		inner.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(upstream.Close)
	clock := &testClock{now: time.Unix(1000, 0)}
	p := widgetProxy(t, upstream, 1, clock)
	listedWidgets(t, p)
	failing.Store(true)
	clock.step(scopeBound)
	if w := send(p, http.MethodPost, "/apis/example.com/v1/widgets", widgetBody); w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "cluster-scoped") {
		t.Errorf("a cluster-scoped write from shard 1 while discovery fails: %d %s, want refused as cluster-scoped", w.Code, w.Body)
	}
}

// The scope a request's success shows: a path in a namespace is served only for a namespaced resource, one outside
// namespaces (but a list or watch across them) only for a cluster-scoped one.
func TestScopeShownByAnswer(t *testing.T) {
	for _, tc := range []struct {
		name       string
		info       request.RequestInfo
		namespaced bool
		shows      bool
	}{
		{"a get in a namespace", request.RequestInfo{IsResourceRequest: true, Verb: "get", Resource: "widgets", Namespace: "a", Name: "w"}, true, true},
		{"a list in a namespace", request.RequestInfo{IsResourceRequest: true, Verb: "list", Resource: "widgets", Namespace: "a"}, true, true},
		{"a get outside namespaces", request.RequestInfo{IsResourceRequest: true, Verb: "get", Resource: "widgets", Name: "w"}, false, true},
		{"a create outside namespaces", request.RequestInfo{IsResourceRequest: true, Verb: "create", Resource: "widgets"}, false, true},
		{"a list across namespaces", request.RequestInfo{IsResourceRequest: true, Verb: "list", Resource: "widgets"}, false, false},
		{"a watch across namespaces", request.RequestInfo{IsResourceRequest: true, Verb: "watch", Resource: "widgets"}, false, false},
		{"a namespace", request.RequestInfo{IsResourceRequest: true, Verb: "get", Resource: "namespaces", Namespace: "a", Name: "a"}, false, false},
		{"discovery", request.RequestInfo{Verb: "get", Path: "/apis"}, false, false},
	} {
		r := req(tc.info)
		if namespaced, shows := scopeShownBy(&r); namespaced != tc.namespaced || shows != tc.shows {
			t.Errorf("%s: shows namespaced %v (%v), want %v (%v)", tc.name, namespaced, shows, tc.namespaced, tc.shows)
		}
	}
}

// A watch across namespaces opened while widgets were known cluster-scoped relayed every widget, as a cluster-scoped
// resource's watch: once discovery is read again and tells they are namespaced now, the watch ends with 410 Expired
// (its client lists again, narrowed to the shard's namespaces) instead of relaying another shard's widgets.
func TestWatchEndsWhenDiscoveryChangesItsResourceScope(t *testing.T) {
	lower := shard.NewSet(shard.Range{First: 0, Last: 1<<63 - 1})
	_, theirs := namespacesIn(lower)
	var namespaced atomic.Bool
	events := make(chan string, 4)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/apis/example.com/v1":
			_ = json.NewEncoder(w).Encode(metav1.APIResourceList{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{
				{Name: "widgets", Kind: "Widget", Namespaced: namespaced.Load(), Verbs: []string{"create", "list", "get", "watch"}}}})
		case r.URL.Query().Get("watch") == "true":
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			for {
				select {
				case e := <-events:
					fmt.Fprintln(w, e)
					w.(http.Flusher).Flush()
				case <-r.Context().Done():
					return
				}
			}
		default:
			fmt.Fprint(w, `{"apiVersion":"example.com/v1","kind":"WidgetList","metadata":{"resourceVersion":"10"},"items":[]}`)
		}
	}))
	defer upstream.Close()
	clock := &testClock{now: time.Unix(1000, 0)}
	p := widgetProxy(t, upstream, 0, clock)
	front := httptest.NewServer(p)
	defer front.Close()

	listedWidgets(t, p) // learns widgets cluster-scoped
	resp, err := http.Get(front.URL + "/apis/example.com/v1/widgets?watch=true&resourceVersion=10")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)

	namespaced.Store(true) // the CRD recreated namespaced
	clock.step(scopeBound)
	listedWidgets(t, p) // reads discovery again: widgets are namespaced now
	if ns, _ := p.scopes.told("", "example.com", "v1", "widgets"); !ns {
		t.Fatal("discovery was not read again")
	}
	events <- `{"type":"ADDED","object":{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"` + theirs + `","resourceVersion":"11"}}}`
	got := make(chan string, 1)
	go func() {
		if lines.Scan() {
			got <- lines.Text()
		}
		close(got)
	}()
	select {
	case line := <-got:
		if strings.Contains(line, theirs) || !strings.Contains(line, `"ERROR"`) || !strings.Contains(line, "Expired") {
			t.Errorf("shard 0's watch opened under the old scope, after discovery told the new one: sent %q, want an ERROR event with 410 Expired", line)
		}
	case <-time.After(5 * time.Second):
		t.Error("shard 0's watch opened under the old scope neither ended nor relayed anything after discovery told the new one")
	}
	if ended := value(t, p.metrics.endedWatches); ended != 1 {
		t.Errorf("ended watches counted: %v, want 1", ended)
	}
}

// Nearly every answer agrees with discovery: taking it in reads what discovery told under the read lock alone, so
// that the requests answered at once do not queue on one lock. Only an answer that contradicts it writes.
func TestAnswerAgreeingWithDiscoveryTakesNoWriteLock(t *testing.T) {
	s := newScopes(newResourceLabels())
	now := time.Unix(1000, 0)
	s.now = func() time.Time { return now }
	key := scopeKey{"", "example.com", "v1"}
	s.known[key] = &learnedScopes{namespaced: map[string]bool{"widgets": true}, at: now.Add(-scopeBound / 2), recheck: now.Add(scopeBound / 2)}

	s.mu.RLock() // another request reading
	done := make(chan struct{})
	go func() {
		s.answered("", "example.com", "v1", "widgets", true)
		s.answered("", "example.com", "v1", "gadgets", false) // not learned: nothing to contradict
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("an answer agreeing with discovery waited for the write lock")
	}
	s.mu.RUnlock()

	s.answered("", "example.com", "v1", "widgets", false)
	if got := s.known[key].recheck; !got.Equal(now) {
		t.Errorf("an answer contradicting discovery left its recheck at %v, want now (%v)", got, now)
	}
}
