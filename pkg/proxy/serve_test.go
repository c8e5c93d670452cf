package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fedmesh/fedmesh/pkg/shard"
)

// recordingUpstream serves discovery of pods and leases and hands every other request to h, noting its method,
// path and query.
type recordingUpstream struct {
	mu   sync.Mutex
	seen []string
}

func (u *recordingUpstream) start(t *testing.T, h http.HandlerFunc) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v1":
			io.WriteString(w, `{"kind":"APIResourceList","groupVersion":"v1","resources":[{"name":"pods","namespaced":true,"kind":"Pod","verbs":["create","list","watch"]}]}`)
			return
		case "/apis/coordination.k8s.io/v1":
			io.WriteString(w, `{"kind":"APIResourceList","groupVersion":"coordination.k8s.io/v1","resources":[{"name":"leases","namespaced":true,"kind":"Lease","verbs":["list","watch"]}]}`)
			return
		}
		u.mu.Lock()
		u.seen = append(u.seen, r.Method+" "+r.URL.RequestURI())
		u.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func (u *recordingUpstream) requests() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.seen...)
}

// halfOwnership is an ownership of the lower half of the hash space in mode, and a namespace in it and one not.
func halfOwnership(mode string) (doc, mine, foreign string) {
	half := shard.NewSet(shard.Range{First: 0, Last: 1<<63 - 1})
	mine, foreign = namespacesIn(half)
	return fmt.Sprintf(`{"shard":0,"filterMode":%q,"assignment":{"0":%q,"1":%q}}`, mode, half, half.Complement()), mine, foreign
}

// TestConnectionsIntoPodsAreFenced: exec, attach, port-forward and a pod's or a service's proxy act in their
// namespace whatever their verb: a WebSocket exec (kubectl's since 1.30) is a GET.
func TestConnectionsIntoPodsAreFenced(t *testing.T) {
	u := &recordingUpstream{}
	upstream := u.start(t, func(w http.ResponseWriter, r *http.Request) {})
	doc, mine, foreign := halfOwnership("client")
	p, _ := proxyOwning(t, upstream, doc)
	for _, tc := range []struct {
		method, sub string // sub: the path after the namespace
		websocket   bool
	}{
		{http.MethodPost, "pods/web/exec?command=sh", false},
		{http.MethodGet, "pods/web/exec?command=sh", true},
		{http.MethodGet, "pods/web/attach", true},
		{http.MethodGet, "pods/web/portforward?ports=80", true},
		{http.MethodGet, "pods/web/proxy/metrics", false},
		{http.MethodGet, "services/web/proxy/metrics", false},
	} {
		for ns, want := range map[string]int{foreign: http.StatusForbidden, mine: http.StatusOK} {
			r := httptest.NewRequest(tc.method, "/api/v1/namespaces/"+ns+"/"+tc.sub, nil)
			if tc.websocket {
				r.Header.Set("Connection", "Upgrade")
				r.Header.Set("Upgrade", "websocket")
			}
			w := httptest.NewRecorder()
			p.ServeHTTP(w, r)
			if w.Code != want {
				t.Errorf("%s %s in %s: %d, want %d", tc.method, tc.sub, ns, w.Code, want)
			}
		}
	}
	for _, seen := range u.requests() {
		if strings.Contains(seen, "/"+foreign+"/") {
			t.Errorf("reached the API server: %s", seen)
		}
	}
}

// TestLabelModeStampsObjectsOnly: in label mode a create of an object gets the bucket label, in JSON or YAML; a
// create of a subresource (an exec, a POST to a pod's own server) passes as it came.
func TestLabelModeStampsObjectsOnly(t *testing.T) {
	bodies := make(chan string, 1)
	u := &recordingUpstream{}
	upstream := u.start(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies <- r.Header.Get("Content-Type") + " " + string(b)
	})
	doc, mine, _ := halfOwnership("label")
	p, _ := proxyOwning(t, upstream, doc)
	bucket := `"` + shard.BucketLabel + `":"` + shard.BucketLabelValue(mine) + `"`
	for _, tc := range []struct {
		path, contentType, body, want string
		upgrade                       bool
	}{
		{path: "pods", contentType: "application/json", body: `{"metadata":{"name":"p"}}`, want: "application/json " + `{"metadata":{"name":"p","labels":{` + bucket + `}}}`},
		{path: "pods", contentType: "application/yaml", body: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n",
			want: "application/json " + `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{` + bucket + `}}}`},
		{path: "pods/web/proxy/orders", contentType: "application/json", body: `{"item":"book"}`, want: `application/json {"item":"book"}`},
		{path: "pods/web/exec?command=sh", upgrade: true, want: " "},
		{path: "pods?fieldValidation=Strict", contentType: "application/yaml", body: "metadata: {name: p}\nmetadata: {name: q}\n", want: "400"},
		{path: "pods", contentType: "application/yaml", body: "metadata: {name: p}\nmetadata: {name: q}\n",
			want: "application/json " + `{"metadata":{"name":"q","labels":{` + bucket + `}}}`},
	} {
		r := httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/"+mine+"/"+tc.path, strings.NewReader(tc.body))
		if tc.contentType != "" {
			r.Header.Set("Content-Type", tc.contentType)
		}
		if tc.upgrade {
			r.Header.Set("Connection", "Upgrade")
			r.Header.Set("Upgrade", "SPDY/3.1")
		}
		w := httptest.NewRecorder()
		p.ServeHTTP(w, r)
		if tc.want == "400" {
			if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "already set in map") {
				t.Errorf("POST %s with a duplicate key: %d %s", tc.path, w.Code, w.Body)
			}
			continue
		}
		if w.Code != http.StatusOK {
			t.Errorf("POST %s: %d %s", tc.path, w.Code, w.Body)
			continue
		}
		if got := <-bodies; got != tc.want {
			t.Errorf("POST %s: the API server got %s, want %s", tc.path, got, tc.want)
		}
	}
}

// TestLabelModeStampsUpdates: in label mode an update (PUT) of an object gets the bucket label as a create does:
// controllers that set an object's labels whole (the EndpointSlice controller sets its slices' to the Service's)
// would otherwise take it off, and the object would drop out of the shard's view. An update of a subresource (a
// status, a scale) carries no labels the API server keeps, and a patch says only what changes: both pass as they
// came.
func TestLabelModeStampsUpdates(t *testing.T) {
	bodies := make(chan string, 1)
	u := &recordingUpstream{}
	upstream := u.start(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies <- r.Header.Get("Content-Type") + " " + string(b)
	})
	doc, mine, _ := halfOwnership("label")
	p, _ := proxyOwning(t, upstream, doc)
	bucket := `"` + shard.BucketLabel + `":"` + shard.BucketLabelValue(mine) + `"`
	for _, tc := range []struct {
		method, path, contentType, body, want string
	}{
		{method: http.MethodPut, path: "pods/p", contentType: "application/json",
			body: `{"metadata":{"name":"p","labels":{"app":"web"}}}`,
			want: "application/json " + `{"metadata":{"name":"p","labels":{"app":"web",` + bucket + `}}}`},
		{method: http.MethodPut, path: "pods/p", contentType: "application/json",
			body: `{"metadata":{"name":"p","labels":{"` + shard.BucketLabel + `":"zz"}}}`,
			want: "application/json " + `{"metadata":{"name":"p","labels":{` + bucket + `}}}`},
		{method: http.MethodPut, path: "pods/p", contentType: "application/yaml", body: "metadata: {name: p}\n",
			want: "application/json " + `{"metadata":{"name":"p","labels":{` + bucket + `}}}`},
		{method: http.MethodPut, path: "pods/p/status", contentType: "application/json", body: `{"metadata":{"name":"p"}}`,
			want: `application/json {"metadata":{"name":"p"}}`},
		{method: http.MethodPatch, path: "pods/p", contentType: "application/merge-patch+json",
			body: `{"metadata":{"labels":{"app":"web"}}}`, want: `application/merge-patch+json {"metadata":{"labels":{"app":"web"}}}`},
	} {
		r := httptest.NewRequest(tc.method, "/api/v1/namespaces/"+mine+"/"+tc.path, strings.NewReader(tc.body))
		r.Header.Set("Content-Type", tc.contentType)
		w := httptest.NewRecorder()
		p.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			t.Errorf("%s %s: %d %s", tc.method, tc.path, w.Code, w.Body)
			continue
		}
		if got := <-bodies; got != tc.want {
			t.Errorf("%s %s: the API server got %s, want %s", tc.method, tc.path, got, tc.want)
		}
	}
}

// TestLeaseListsAreNotRenamed: a list or watch of Leases by the configured name (a field selector) is a list; it
// is not sent as a GET of the shard's Lease.
func TestLeaseListsAreNotRenamed(t *testing.T) {
	u := &recordingUpstream{}
	upstream := u.start(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"kind":"LeaseList","apiVersion":"coordination.k8s.io/v1","metadata":{"resourceVersion":"9"},"items":[]}`)
	})
	doc := `{"shard":0,"assignment":{"0":"` + shard.Full().String() + `"},"leaderElection":{"leaseName":"op","leaseNamespace":"ops"}}`
	p, _ := proxyOwning(t, upstream, doc)
	p.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/apis/coordination.k8s.io/v1/namespaces/ops/leases?fieldSelector=metadata.name%3Dop", nil))
	p.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/apis/coordination.k8s.io/v1/namespaces/ops/leases/op", nil))
	want := []string{"GET /apis/coordination.k8s.io/v1/namespaces/ops/leases?fieldSelector=metadata.name%3Dop", "GET /apis/coordination.k8s.io/v1/namespaces/ops/leases/op-shard-0"}
	if got := u.requests(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the API server was asked\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// firstEvent opens a watch through srv at path and returns its first line, or "" when none comes within a while.
func firstEvent(t *testing.T, srv *httptest.Server, path string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	return lineWithin(bufio.NewReader(resp.Body), 5*time.Second)
}

// addedPods writes a watch's ADDED events of a pod in each namespace, and keeps the watch open.
func addedPods(w http.ResponseWriter, r *http.Request, namespaces ...string) {
	for _, ns := range namespaces {
		fmt.Fprintf(w, `{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":%q}}}`+"\n", ns)
	}
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

// TestWatchOnTheLegacyPath: before a watch in server or auto mode, the proxy lists to learn whether the API
// server filters. For a watch on the legacy /watch/ path, that list is a list, not a watch the proxy would wait on
// to its end.
func TestWatchOnTheLegacyPath(t *testing.T) {
	for _, mode := range []string{"server", "auto"} {
		t.Run(mode, func(t *testing.T) {
			doc, mine, _ := halfOwnership(mode)
			u := &recordingUpstream{}
			upstream := u.start(t, func(w http.ResponseWriter, r *http.Request) {
				if !strings.Contains(r.URL.Path, "/watch/") && r.URL.Query().Get("watch") != "true" {
					fmt.Fprintf(w, `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9","shardInfo":{"selector":%q}},"items":[]}`, r.URL.Query().Get("shardSelector"))
					return
				}
				addedPods(w, r, mine)
			})
			p, _ := proxyOwning(t, upstream, doc)
			srv := httptest.NewServer(p)
			t.Cleanup(srv.Close)
			if line := firstEvent(t, srv, "/api/v1/watch/pods"); !strings.Contains(line, `"namespace":"`+mine+`"`) {
				t.Errorf("a watch on /api/v1/watch/pods: first event %q; the API server was asked %q", line, u.requests())
			}
			if !strings.Contains(strings.Join(u.requests(), "\n"), "GET /api/v1/pods?limit=1&shardSelector=") {
				t.Errorf("no probe list on /api/v1/pods: %q", u.requests())
			}
		})
	}
}

// TestWatchAfterAFailedProbeIsFiltered: in server mode, a watch whose probe list failed is filtered by the proxy:
// the API server may not filter.
func TestWatchAfterAFailedProbeIsFiltered(t *testing.T) {
	doc, mine, foreign := halfOwnership("server")
	u := &recordingUpstream{}
	upstream := u.start(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") != "true" {
			http.Error(w, "list is unavailable", http.StatusServiceUnavailable)
			return
		}
		addedPods(w, r, foreign, mine) // an API server that does not filter
	})
	p, _ := proxyOwning(t, upstream, doc)
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	if line := firstEvent(t, srv, "/api/v1/pods?watch=true"); !strings.Contains(line, `"namespace":"`+mine+`"`) {
		t.Errorf("first event %q, want the one in %s", line, mine)
	}
}
