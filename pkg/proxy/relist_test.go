package proxy

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/pkg/shard"
)

// The relist fence, step by step: each step changes the ownership or reports a request, then the writability of
// the namespaces is checked.
func TestRelistFence(t *testing.T) {
	bound := time.Minute
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ownerships := map[string]*config.Ownership{}
	owning := func(namespaces ...string) *config.Ownership {
		name := ""
		var ranges shard.Set
		for _, ns := range namespaces {
			name += ns + ","
			ranges = ranges.Union(rangesOf(ns))
		}
		if own, ok := ownerships[name]; ok {
			return own
		}
		own := &config.Ownership{Shard: 1, Assignment: shard.Assignment{1: ranges}}
		ownerships[name] = own
		return own
	}
	policies := servedKey{resource: schema.GroupResource{Group: "policy.fedmesh.io", Resource: "propagationpolicies"}}
	configMaps := servedKey{resource: schema.GroupResource{Resource: "configmaps"}}
	inGranted := servedKey{resource: schema.GroupResource{Resource: "configmaps"}, namespace: "granted"}
	inOther := servedKey{resource: schema.GroupResource{Resource: "configmaps"}, namespace: "other"}
	inMine := servedKey{resource: schema.GroupResource{Resource: "configmaps"}, namespace: "mine"}

	// step is one thing that happens at t0+at; writable then lists what must be writable and the rest of
	// mine, granted and other must not be.
	type step struct {
		at       time.Duration
		do       func(f *relistFence, now time.Time)
		own      *config.Ownership // the ownership writes are let through under; nil: the last one taken in
		writable []string
	}
	change := func(own *config.Ownership, stale ...servedKey) func(*relistFence, time.Time) {
		return func(f *relistFence, now time.Time) { f.changed(own, stale, now) }
	}
	listed := func(key servedKey) func(*relistFence, time.Time) {
		return func(f *relistFence, _ time.Time) { f.listed(key) }
	}
	resumed := func(key servedKey) func(*relistFence, time.Time) {
		return func(f *relistFence, _ time.Time) { f.resumed(key) }
	}
	bookmark := func(key servedKey) func(*relistFence, time.Time) {
		return func(f *relistFence, _ time.Time) { f.initialEventsEnded(key) }
	}
	stale := func(key servedKey) func(*relistFence, time.Time) {
		return func(f *relistFence, now time.Time) { f.madeStale(key, now) }
	}
	nothing := func(*relistFence, time.Time) {}
	mine, both := owning("mine"), owning("mine", "granted")

	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"a start fences nothing", []step{
			{0, change(mine), nil, []string{"mine"}},
		}},
		{"a start with watches open under no ownership: the lease restored", []step{
			{0, change(nil), nil, nil},
			{time.Second, change(mine, configMaps), nil, nil},
			{2 * time.Second, bookmark(configMaps), nil, []string{"mine"}},
		}},
		{"a grant while no informer watches fences nothing", []step{
			{0, change(mine), nil, []string{"mine"}},
			{time.Second, change(both), nil, []string{"mine", "granted"}},
		}},
		{"a grant waits for every watch it ended", []step{
			{0, change(mine), nil, []string{"mine"}},
			{time.Second, change(both, policies, configMaps), nil, []string{"mine"}},
			{2 * time.Second, bookmark(configMaps), nil, []string{"mine"}},
			{3 * time.Second, listed(policies), nil, []string{"mine"}},
			{4 * time.Second, resumed(policies), nil, []string{"mine", "granted"}},
		}},
		{"a list is not enough: its pages may go on, its store is replaced before the watch", []step{
			{0, change(mine), nil, []string{"mine"}},
			{time.Second, change(both, policies), nil, []string{"mine"}},
			{2 * time.Second, listed(policies), nil, []string{"mine"}},
			{3 * time.Second, listed(policies), nil, []string{"mine"}},
		}},
		{"a resumed watch without a list under the new view is not a relist", []step{
			{0, change(mine), nil, []string{"mine"}},
			{time.Second, change(both, policies), nil, []string{"mine"}},
			{2 * time.Second, resumed(policies), nil, []string{"mine"}},
		}},
		{"an informer that never comes back fences for the bound only", []step{
			{0, change(mine), nil, []string{"mine"}},
			{time.Second, change(both, policies), nil, []string{"mine"}},
			{time.Second + bound - time.Millisecond, nothing, nil, []string{"mine"}},
			{time.Second + bound, nothing, nil, []string{"mine", "granted"}},
		}},
		{"a write under an ownership not taken in yet", []step{
			{0, change(mine), nil, []string{"mine"}},
			{time.Second, nothing, both, []string{"mine"}},
			{2 * time.Second, change(both), both, []string{"mine", "granted"}},
		}},
		{"a revocation fences nothing new", []step{
			{0, change(both), nil, []string{"mine", "granted"}},
			{time.Second, change(mine, policies), nil, []string{"mine"}},
		}},
		{"a watch made stale after the grant is awaited too", []step{
			{0, change(mine), nil, []string{"mine"}},
			{time.Second, change(both), nil, []string{"mine", "granted"}},
			{2 * time.Second, stale(policies), nil, []string{"mine"}},
			{3 * time.Second, bookmark(policies), nil, []string{"mine", "granted"}},
		}},
		{"a watch made stale past the bound fences nothing", []step{
			{0, change(mine), nil, []string{"mine"}},
			{time.Second, change(both), nil, []string{"mine", "granted"}},
			{time.Second + bound, stale(policies), nil, []string{"mine", "granted"}},
		}},
		{"a namespace waits only for the keys that can see it", []step{
			{0, change(owning("mine")), nil, []string{"mine"}},
			{time.Second, change(owning("mine", "granted", "other"), inGranted, inOther), nil, []string{"mine"}},
			{2 * time.Second, listed(inGranted), nil, []string{"mine"}},
			{3 * time.Second, resumed(inGranted), nil, []string{"mine", "granted"}},
			{4 * time.Second, bookmark(inOther), nil, []string{"mine", "granted", "other"}},
		}},
		{"a key across namespaces holds every namespace granted", []step{
			{0, change(owning("mine")), nil, []string{"mine"}},
			{time.Second, change(owning("mine", "granted", "other"), inGranted, configMaps), nil, []string{"mine"}},
			{2 * time.Second, bookmark(inGranted), nil, []string{"mine"}},
			{3 * time.Second, bookmark(configMaps), nil, []string{"mine", "granted", "other"}},
		}},
		{"a key of a namespace not granted holds nothing", []step{
			{0, change(owning("mine", "other")), nil, []string{"mine", "other"}},
			{time.Second, change(owning("granted", "mine"), inOther, inMine), nil, []string{"mine", "granted"}},
			{2 * time.Second, stale(inMine), nil, []string{"mine", "granted"}},
		}},
		{"a key made stale again after its list awaits another list", []step{
			{0, change(mine), nil, []string{"mine"}},
			{time.Second, change(both, policies), nil, []string{"mine"}},
			{2 * time.Second, listed(policies), nil, []string{"mine"}},
			{3 * time.Second, stale(policies), nil, []string{"mine"}},
			{4 * time.Second, resumed(policies), nil, []string{"mine"}},
			{5 * time.Second, listed(policies), nil, []string{"mine"}},
			{6 * time.Second, resumed(policies), nil, []string{"mine", "granted"}},
		}},
		{"a list before the key was found stale does not count", []step{
			{0, change(mine), nil, []string{"mine"}},
			{time.Second, listed(policies), nil, []string{"mine"}},
			{time.Second, change(both, policies), nil, []string{"mine"}},
			{2 * time.Second, resumed(policies), nil, []string{"mine"}},
		}},
		{"a revocation forgets what was awaited of its ranges", []step{
			{0, change(owning("mine")), nil, []string{"mine"}},
			{time.Second, change(owning("mine", "granted", "other"), inGranted, inOther), nil, []string{"mine"}},
			{2 * time.Second, change(owning("mine", "other")), nil, []string{"mine"}},
			{3 * time.Second, bookmark(inOther), nil, []string{"mine", "other"}},
			{3 * time.Second, bookmark(inGranted), nil, []string{"mine", "other"}}, // relisted while revoked
			{4 * time.Second, change(owning("mine", "other", "granted")), nil, []string{"mine", "other", "granted"}},
		}},
		{"a grant awaits a key a revoke ended that has not relisted since", []step{
			{0, change(owning("mine", "other")), nil, []string{"mine", "other"}},
			{time.Second, change(mine, configMaps), nil, []string{"mine"}},
			{2 * time.Second, change(both), nil, []string{"mine"}}, // its reflector still in its backoff
			{3 * time.Second, listed(configMaps), nil, []string{"mine"}},
			{4 * time.Second, resumed(configMaps), nil, []string{"mine", "granted"}},
		}},
		{"a key that relisted after the revoke holds no grant", []step{
			{0, change(owning("mine", "other")), nil, []string{"mine", "other"}},
			{time.Second, change(mine, configMaps), nil, []string{"mine"}},
			{2 * time.Second, listed(configMaps), nil, []string{"mine"}},
			{2 * time.Second, resumed(configMaps), nil, []string{"mine"}},
			{3 * time.Second, change(both), nil, []string{"mine", "granted"}},
		}},
		{"a key listed before the grant awaits another list", []step{
			{0, change(owning("mine", "other")), nil, []string{"mine", "other"}},
			{time.Second, change(mine, configMaps), nil, []string{"mine"}},
			{2 * time.Second, listed(configMaps), nil, []string{"mine"}},
			{3 * time.Second, change(both), nil, []string{"mine"}},
			{4 * time.Second, resumed(configMaps), nil, []string{"mine"}},
			{5 * time.Second, listed(configMaps), nil, []string{"mine"}},
			{6 * time.Second, resumed(configMaps), nil, []string{"mine", "granted"}},
		}},
		{"granting back what a revoke took awaits the keys it ended", []step{
			{0, change(owning("mine", "other")), nil, []string{"mine", "other"}},
			{time.Second, change(mine, inOther, configMaps), nil, []string{"mine"}},
			{2 * time.Second, change(owning("mine", "other")), nil, []string{"mine"}},
			{3 * time.Second, bookmark(inOther), nil, []string{"mine"}},
			{4 * time.Second, bookmark(configMaps), nil, []string{"mine", "other"}},
		}},
		{"a key a revoke ended holds only what it can see", []step{
			{0, change(owning("mine", "other")), nil, []string{"mine", "other"}},
			{time.Second, change(mine, inOther), nil, []string{"mine"}},
			{2 * time.Second, change(both), nil, []string{"mine", "granted"}},
		}},
		{"a key a revoke ended is remembered for the bound only", []step{
			{0, change(owning("mine", "other")), nil, []string{"mine", "other"}},
			{time.Second, change(mine, configMaps), nil, []string{"mine"}},
			{30 * time.Second, change(both), nil, []string{"mine"}},
			{time.Second + bound - time.Millisecond, nothing, nil, []string{"mine"}},
			{time.Second + bound, nothing, nil, []string{"mine", "granted"}},
			{time.Second + bound, change(owning("mine", "granted", "other")), nil, []string{"mine", "granted", "other"}},
		}},
		{"a watch refused before a grant is awaited by it", []step{
			{0, change(mine), nil, []string{"mine"}},
			{bound, stale(policies), nil, []string{"mine"}}, // past the start's own window
			{bound + time.Second, change(both), nil, []string{"mine"}},
			{bound + 2*time.Second, bookmark(policies), nil, []string{"mine", "granted"}},
		}},
		{"a second grant before the first's relists", []step{
			{0, change(owning("mine", "other")), nil, []string{"mine", "other"}},
			{time.Second, change(owning("mine", "other", "granted"), policies), nil, []string{"mine", "other"}},
			{2 * time.Second, change(owning("granted", "mine")), nil, []string{"mine"}},
			{3 * time.Second, change(owning("granted", "mine", "other"), configMaps), nil, []string{"mine"}},
			{4 * time.Second, bookmark(policies), nil, []string{"mine"}},
			{5 * time.Second, bookmark(configMaps), nil, []string{"mine", "granted", "other"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRelistFence(bound)
			var last *config.Ownership
			for i, s := range tc.steps {
				now := t0.Add(s.at)
				s.do(f, now)
				f.mu.Lock()
				if last = f.settled; s.own != nil {
					last = s.own
				}
				f.mu.Unlock()
				want := map[string]bool{}
				for _, ns := range s.writable {
					want[ns] = true
				}
				for _, ns := range []string{"mine", "granted", "other"} {
					if !last.Owned().ContainsNamespace(ns) {
						continue // the ownership fence refuses it
					}
					if got := f.writable(last, ns, now); got != want[ns] {
						t.Errorf("step %d (at %v): %s writable %v, want %v", i, s.at, ns, got, want[ns])
					}
				}
			}
		})
	}
}

// A watch-list's initial-events-end bookmark is told from its other events in every encoding, without decoding.
func TestEndsInitialEvents(t *testing.T) {
	for _, tc := range []struct {
		name  string
		event string
		ends  bool
	}{
		{"JSON", `{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"12","annotations":{"k8s.io/initial-events-end":"true"}}}}` + "\n", true},
		{"protobuf", "\x00\x00\x00\x40\n\bBOOKMARK\x12\x34k8s\x00\n\x0f\n\x02v1\x12\tConfigMap\x12\x1b\n\x19k8s.io/initial-events-end", true},
		{"a bookmark without the annotation", `{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"12"}}}` + "\n", false},
		{"an object added", `{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","resourceVersion":"11"}}}` + "\n", false},
	} {
		if got := endsInitialEvents([]byte(tc.event)); got != tc.ends {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.ends)
		}
	}
}

// configMapUpstream answers discovery of ConfigMaps, their lists (empty, at resourceVersion 10), their watches (one
// event, then held open) and their creates.
func configMapUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/api/v1":
			io.WriteString(w, `{"kind":"APIResourceList","groupVersion":"v1","resources":[
				{"name":"configmaps","namespaced":true,"kind":"ConfigMap","verbs":["create","list","watch"]}]}`)
		case !strings.HasSuffix(r.URL.Path, "/configmaps"):
			http.NotFound(w, r)
		case r.Method == http.MethodPost:
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x"}}`)
		case r.URL.Query().Get("watch") == "true":
			io.WriteString(w, `{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"seen","namespace":"mine","resourceVersion":"11"}}}`+"\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		default:
			io.WriteString(w, `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"10"},"items":[]}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// informerClient does through a proxy what a reflector does: list, watch (from a list's resourceVersion), and the
// operator's writes.
type informerClient struct {
	t   *testing.T
	url string
}

func (c informerClient) list(path string) {
	c.t.Helper()
	resp, err := http.Get(c.url + path)
	if err != nil {
		c.t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		c.t.Fatalf("list %s: %d %s", path, resp.StatusCode, body)
	}
}

// watch opens a watch of path (from resourceVersion 10, the lists', when resume) and reads its first event.
func (c informerClient) watch(path string, resume bool) *bufio.Reader {
	c.t.Helper()
	query := "?watch=true"
	if resume {
		query += "&resourceVersion=10"
	}
	resp, err := http.Get(c.url + path + query)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { resp.Body.Close() })
	lines := bufio.NewReader(resp.Body)
	if line := lineWithin(lines, 5*time.Second); !strings.Contains(line, `"ADDED"`) {
		c.t.Fatalf("watch %s%s: %d, first event %q", path, query, resp.StatusCode, line)
	}
	return lines
}

// ended checks that a watch was ended with a 410 ERROR event, for its client to list again.
func (c informerClient) ended(what string, lines *bufio.Reader) {
	c.t.Helper()
	if line := lineWithin(lines, 5*time.Second); !strings.Contains(line, `"code":410`) {
		c.t.Fatalf("%s: %q, want a 410 ERROR event", what, line)
	}
}

// create is the status of a ConfigMap's create in namespace.
func (c informerClient) create(namespace string) int {
	c.t.Helper()
	resp, err := http.Post(c.url+"/api/v1/namespaces/"+namespace+"/configmaps", "application/json",
		strings.NewReader(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"generateName":"w-"}}`))
	if err != nil {
		c.t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// An operator with an informer per namespace (controller-runtime's cache limited to some namespaces): a grant of two
// namespaces ends the watch of each, and each namespace is writable once its own informer has relisted, whatever the
// other's does. The bound (minutes) is never reached.
func TestGrantedNamespaceWaitsOnlyForItsInformers(t *testing.T) {
	clientMode := `,"filterMode":"client"`
	p, store := proxyOwning(t, configMapUpstream(t), shardOneOwning(1, rangesOf("mine"), clientMode))
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	c := informerClient{t, srv.URL}
	one, two := "/api/v1/namespaces/one/configmaps", "/api/v1/namespaces/two/configmaps"
	c.list(one)
	watchOne := c.watch(one, true)
	c.list(two)
	watchTwo := c.watch(two, true)
	if err := store.Apply(config.KindOwnership, "2", []byte(shardOneOwning(2, rangesOf("mine", "one", "two"), clientMode))); err != nil {
		t.Fatal(err)
	}
	c.ended("the watch of namespace one", watchOne)
	c.ended("the watch of namespace two", watchTwo)
	if got := c.create("one"); got != http.StatusForbidden {
		t.Errorf("a write in namespace one before its informer relisted: %d, want 403", got)
	}
	c.list(one)
	c.watch(one, true)
	if got := c.create("one"); got != http.StatusCreated {
		t.Errorf("a write in namespace one once its informer relisted (namespace two's has not): %d, want 201", got)
	}
	if got := c.create("two"); got != http.StatusForbidden {
		t.Errorf("a write in namespace two before its informer relisted: %d, want 403", got)
	}
	c.list(two)
	c.watch(two, true)
	if got := c.create("two"); got != http.StatusCreated {
		t.Errorf("a write in namespace two once its informer relisted: %d, want 201", got)
	}
}

// closeHolding holds the first watch body's Close, once the body is closed, until release: the proxy has ended that
// watch and is still taking the change in.
type closeHolding struct {
	http.RoundTripper
	once             sync.Once
	closing, release chan struct{}
}

func (h *closeHolding) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := h.RoundTripper.RoundTrip(r)
	if err == nil && r.URL.Query().Get("watch") == "true" {
		resp.Body = heldCloser{resp.Body, h}
	}
	return resp, err
}

type heldCloser struct {
	io.ReadCloser
	h *closeHolding
}

func (b heldCloser) Close() error {
	err := b.ReadCloser.Close()
	b.h.once.Do(func() { close(b.h.closing); <-b.h.release })
	return err
}

// A client that lists again as soon as the grant ends its watch, before the proxy is done taking the grant in, has
// its list counted: its watch from that list lifts the fence, which otherwise would hold the granted namespace for
// the bound.
func TestRelistAsTheGrantEndsTheWatchLiftsTheFence(t *testing.T) {
	clientMode := `,"filterMode":"client"`
	p, store := proxyOwning(t, configMapUpstream(t), shardOneOwning(1, rangesOf("mine"), clientMode))
	hold := &closeHolding{RoundTripper: p.host.forward.Transport, closing: make(chan struct{}), release: make(chan struct{})}
	p.host.forward.Transport = hold
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	var released sync.Once
	release := func() { released.Do(func() { close(hold.release) }) }
	t.Cleanup(release)
	c := informerClient{t, srv.URL}
	all := "/api/v1/configmaps"
	c.list(all)
	watch := c.watch(all, true)
	granted := make(chan error, 1)
	go func() {
		granted <- store.Apply(config.KindOwnership, "2", []byte(shardOneOwning(2, rangesOf("mine", "granted"), clientMode)))
	}()
	select {
	case <-hold.closing:
	case <-time.After(10 * time.Second):
		t.Fatal("the grant did not end the watch")
	}
	c.ended("the watch across namespaces", watch)
	c.list(all)
	c.watch(all, true)
	release()
	if err := <-granted; err != nil {
		t.Fatal(err)
	}
	if got := c.create("granted"); got != http.StatusCreated {
		t.Errorf("a write in the granted namespace after the informer relisted under the grant: %d, want 201", got)
	}
	if got := c.create("mine"); got != http.StatusCreated {
		t.Errorf("a write in a namespace owned before: %d, want 201", got)
	}
}

// A revoke ends an informer's watch across namespaces, and a grant follows before the informer has listed again:
// its watch's handler is still closing (a slow client), or closed microseconds after the ERROR event while the
// reflector waits out its 0.8-1.6 s backoff. Writes in the namespace granted wait for that informer's relist, also
// when the grant gives back just what the revoke took (the watch's old view is the new one).
func TestGrantAfterARevokeAwaitsTheInformerItEnded(t *testing.T) {
	owning := func(namespaces ...string) *config.Ownership {
		var ranges shard.Set
		for _, ns := range namespaces {
			ranges = ranges.Union(rangesOf(ns))
		}
		return &config.Ownership{Shard: 1, Assignment: shard.Assignment{1: ranges}}
	}
	for _, tc := range []struct {
		name    string
		granted string
		closed  bool // the handler closed the ended watch before the grant
	}{
		{"another namespace granted, the watch still closing", "granted", false},
		{"another namespace granted, the reflector in its backoff", "granted", true},
		{"the revoked namespace granted back, the watch still closing", "other", false},
		{"the revoked namespace granted back, the reflector in its backoff", "other", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			own0, own1, own2 := owning("mine", "other"), owning("mine"), owning("mine", tc.granted)
			f := newRelistFence(time.Minute)
			w := newWatches()
			now := time.Now()
			f.changed(own0, nil, now)
			key := servedKey{resource: schema.GroupResource{Resource: "configmaps"}} // across namespaces
			b := w.track(io.NopCloser(strings.NewReader("")), func(bool) ([]byte, error) { return nil, nil }, []byte("x"), key,
				func(cur *config.Ownership) bool { return cur.Owned().Equal(own0.Owned()) }, false)
			w.endStale(own1, func(stale []servedKey) { f.changed(own1, stale, now) }) // the revoke
			if tc.closed {
				b.Close()
			}
			w.endStale(own2, func(stale []servedKey) { f.changed(own2, stale, now.Add(10*time.Millisecond)) })
			if f.writable(own2, tc.granted, now.Add(20*time.Millisecond)) {
				t.Fatal("a write in the granted namespace passes before the informer whose watch the revoke ended has listed it")
			}
			f.listed(key)
			f.resumed(key)
			if !f.writable(own2, tc.granted, now.Add(30*time.Millisecond)) {
				t.Error("a write in the granted namespace is refused after the informer relisted")
			}
		})
	}
}

// Through the proxy: a revoke ends the informer's watch across namespaces; the client reads the ERROR event and,
// as a reflector does, waits out its backoff before listing again. A grant in that backoff, with the watch's handler
// long closed, still waits for that informer.
func TestGrantDuringAReflectorsBackoffAwaitsItsRelist(t *testing.T) {
	clientMode := `,"filterMode":"client"`
	p, store := proxyOwning(t, configMapUpstream(t), shardOneOwning(1, rangesOf("mine", "other"), clientMode))
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	c := informerClient{t, srv.URL}
	all := "/api/v1/configmaps"
	c.list(all)
	watch := c.watch(all, true)
	if err := store.Apply(config.KindOwnership, "2", []byte(shardOneOwning(2, rangesOf("mine"), clientMode))); err != nil {
		t.Fatal(err)
	}
	c.ended("the watch across namespaces", watch)
	time.Sleep(200 * time.Millisecond) // within the reflector's backoff; the proxy's handler has closed the body
	if err := store.Apply(config.KindOwnership, "3", []byte(shardOneOwning(3, rangesOf("mine", "granted"), clientMode))); err != nil {
		t.Fatal(err)
	}
	if got := c.create("granted"); got != http.StatusForbidden {
		t.Errorf("a write in the granted namespace while the informer across namespaces has not relisted since the revoke: %d, want 403", got)
	}
	c.list(all)
	c.watch(all, true)
	if got := c.create("granted"); got != http.StatusCreated {
		t.Errorf("a write in the granted namespace once the informer relisted: %d, want 201", got)
	}
}
