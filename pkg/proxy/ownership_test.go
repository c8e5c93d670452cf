package proxy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/pkg/shard"
)

// watchUpstream answers discovery of pods (namespaced) and nodes (cluster-scoped), and watches of either with
// one event in contentType's framing, then holds the stream open.
func watchUpstream(t *testing.T, contentType string, event []byte) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1" {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"kind":"APIResourceList","groupVersion":"v1","resources":[
				{"name":"pods","namespaced":true,"kind":"Pod","verbs":["list","watch"]},
				{"name":"nodes","namespaced":false,"kind":"Node","verbs":["list","watch"]}]}`)
			return
		}
		if r.URL.Query().Get("watch") != "true" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", contentType)
		w.Write(event)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv
}

// proxyOwning fronts upstream with a proxy whose ownership is the document own, returning its store to change it.
func proxyOwning(t *testing.T, upstream *httptest.Server, own string) (*Proxy, *config.Store) {
	t.Helper()
	store, err := config.NewStore("")
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Apply(config.KindOwnership, "1", []byte(own)); err != nil {
		t.Fatal(err)
	}
	p, err := New(Options{Host: &rest.Config{Host: upstream.URL}, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	return p, store
}

// ended reads what follows the first line of a watch within a while: the 410 ERROR event if the proxy ended it,
// nothing if the watch is still open.
func ended(t *testing.T, lines *bufio.Reader) string {
	t.Helper()
	return lineWithin(lines, 300*time.Millisecond)
}

// lineWithin is the next line of lines, or "" when none comes within d.
func lineWithin(lines *bufio.Reader, d time.Duration) string {
	got := make(chan string, 1)
	go func() { s, _ := lines.ReadString('\n'); got <- s }()
	select {
	case s := <-got:
		return s
	case <-time.After(d):
		return ""
	}
}

// An ownership change ends the watches it shows differently, whatever they watch, and only those: a watch of
// cluster-scoped objects ends when the shard stops seeing them; a watch of one namespace the shard keeps stays.
func TestOwnershipChangeEndsTheWatchesItChanges(t *testing.T) {
	upstream := watchUpstream(t, "application/json", []byte(`{"type":"ADDED","object":{"kind":"Node","apiVersion":"v1","metadata":{"name":"n1"}}}`+"\n"))
	half := shard.NewSet(shard.Range{First: 0, Last: 1<<63 - 1})
	kept, _ := namespacesIn(half)
	doc := func(epoch, clusterScopedShard int, owned shard.Set) string {
		return fmt.Sprintf(`{"epoch":%d,"shard":0,"clusterScopedShard":%d,"assignment":{"0":%q,"1":%q}}`,
			epoch, clusterScopedShard, owned, owned.Complement())
	}
	p, store := proxyOwning(t, upstream, doc(1, 0, half))
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	open := func(path string) *bufio.Reader {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		lines := bufio.NewReader(resp.Body)
		if _, err := lines.ReadString('\n'); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return lines
	}
	nodes := open("/api/v1/nodes?watch=true")
	podsKept := open("/api/v1/namespaces/" + kept + "/pods?watch=true")

	// The ranges move (the kept namespace stays) and cluster-scoped objects go to shard 1.
	moved := half.Difference(shard.NewSet(shard.Range{First: 0, Last: 1<<62 - 1})).Union(shard.NewSet(shard.Range{First: shard.NamespaceHash(kept), Last: shard.NamespaceHash(kept)}))
	if err := store.Apply(config.KindOwnership, "2", []byte(doc(2, 1, moved))); err != nil {
		t.Fatal(err)
	}
	if got := ended(t, nodes); !strings.Contains(got, `"code":410`) {
		t.Errorf("the nodes watch of a shard that no longer sees nodes: %q, want a 410 ERROR event", got)
	}
	if got := ended(t, podsKept); got != "" {
		t.Errorf("the watch of namespace %s, still the shard's, was ended: %q", kept, got)
	}
}

// The API server answers a watch asked for in CBOR as a CBOR sequence: the proxy relays it and, on an ownership
// change, ends it with a 410 ERROR event in CBOR.
func TestCBORWatchEndsInCBOR(t *testing.T) {
	upstream := watchUpstream(t, "application/cbor-seq", nil)
	p, store := proxyOwning(t, upstream, `{"epoch":1,"shard":0,"assignment":{"0":"`+shard.Full().String()+`"}}`)
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	r, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/namespaces/a/pods?watch=true", nil)
	r.Header.Set("Accept", "application/cbor")
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("CBOR watch through the proxy: %d %s", resp.StatusCode, body)
	}
	if err := store.Apply(config.KindOwnership, "2", []byte(`{"epoch":2,"shard":0,"assignment":{}}`)); err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var ev metav1.WatchEvent
	info := cbor.NewSerializerInfo(scheme.Scheme, scheme.Scheme)
	if _, _, err := info.Serializer.Decode(body, nil, &ev); err != nil || ev.Type != "ERROR" || !bytes.Contains(ev.Object.Raw, []byte("Expired")) {
		t.Errorf("end of the CBOR watch: %+v (%v), want an ERROR event with a 410 Expired Status", ev, err)
	}
}

// A response the proxy's filter cannot read in the form asked for is answered 406, not as an unreachable API
// server (502, which a circuit breaker would count).
func TestUnfilterableResponseIsNotAcceptable(t *testing.T) {
	owned := shard.NewSet(shard.Range{First: 0, Last: 1<<63 - 1})
	upstream := listUpstream(t, func(w http.ResponseWriter, _ string) {
		io.WriteString(w, `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{},"columnDefinitions":[],"rows":[{"cells":["x"]}]}`)
	})
	p, _ := proxyOwning(t, upstream, fmt.Sprintf(`{"shard":0,"filterMode":"client","assignment":{"0":%q,"1":%q}}`, owned, owned.Complement()))
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL + "/api/v1/pods?includeObject=None")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotAcceptable || !strings.Contains(string(body), "includeObject=Metadata") {
		t.Errorf("a Table without objects in client mode: %d %s, want 406 saying what to ask for", resp.StatusCode, body)
	}
}

// A resource the API server does not have is answered 404 NotFound, as the API server would.
func TestUnknownResourceIsNotFound(t *testing.T) {
	upstream := listUpstream(t, func(http.ResponseWriter, string) {})
	srv := newTestProxy(t, upstream)
	for _, path := range []string{"/api/v1/widgets", "/apis/example.io/v1/widgets"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), `"reason":"NotFound"`) {
			t.Errorf("%s: %d %s, want 404 NotFound", path, resp.StatusCode, body)
		}
	}
}

// A lease timer that fires as contact returns, before Contact could stop it, expires nothing.
func TestLeaseTimerRacingContactExpiresNothing(t *testing.T) {
	upstream := listUpstream(t, func(http.ResponseWriter, string) {})
	p := newOwningProxy(t, upstream)
	p.lease.duration = time.Hour
	p.Contact(false)
	p.lease.mu.Lock()
	timerOfLostContact := p.lease.contacts
	p.lease.mu.Unlock()
	p.Contact(true)
	p.leaseExpired(timerOfLostContact) // as if the timer had fired just before Contact(true) stopped it
	if !p.Ready() {
		t.Error("in contact again, yet owning nothing: the stale timer expired the lease")
	}
	p.Contact(false)
	p.lease.mu.Lock()
	current := p.lease.contacts
	p.lease.mu.Unlock()
	p.leaseExpired(current)
	if p.Ready() {
		t.Error("out of contact for the lease, yet still owning")
	}
}

// A list answered after the ownership it was asked under changed is refused with 410 Expired: its client would
// hold what the shard gave up, and its next watch, narrowed to the new ownership, would never say so.
func TestListAnsweredUnderAnotherOwnershipIsExpired(t *testing.T) {
	half := shard.NewSet(shard.Range{First: 0, Last: 1<<63 - 1})
	asked, answer := make(chan struct{}), make(chan struct{})
	var first sync.Once
	upstream := listUpstream(t, func(w http.ResponseWriter, _ string) {
		first.Do(func() { close(asked); <-answer }) // the first list is held until the ownership changed
		io.WriteString(w, `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9"},"items":[]}`)
	})
	doc := func(epoch int, owned shard.Set) string {
		return fmt.Sprintf(`{"epoch":%d,"shard":0,"filterMode":"client","assignment":{"0":%q,"1":%q}}`, epoch, owned, owned.Complement())
	}
	p, store := proxyOwning(t, upstream, doc(1, half))
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	type result struct {
		code int
		body string
	}
	got := make(chan result, 1)
	go func() {
		resp, err := http.Get(srv.URL + "/api/v1/pods")
		if err != nil {
			got <- result{body: err.Error()}
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got <- result{resp.StatusCode, string(body)}
	}()
	<-asked
	if err := store.Apply(config.KindOwnership, "2", []byte(doc(2, half.Complement()))); err != nil {
		t.Fatal(err)
	}
	close(answer)
	if r := <-got; r.code != http.StatusGone || !strings.Contains(r.body, `"reason":"Expired"`) {
		t.Errorf("a list answered after the ownership changed: %d %s, want 410 Expired", r.code, r.body)
	}
	// Asked and answered under one ownership, a list passes.
	resp, err := http.Get(srv.URL + "/api/v1/pods")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a list under an unchanged ownership: %d", resp.StatusCode)
	}
}
