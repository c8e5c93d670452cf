package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/fedmesh/fedmesh/pkg/shard"
)

// The kubelet's paths that act on one pod name its namespace after the action, read as the API server reads the
// path it sends on (cleaned); the others act on the node.
func TestKubeletPod(t *testing.T) {
	for _, tc := range []struct {
		path      string
		namespace string
		inPod     bool
	}{
		{"exec/team-a/web/app", "team-a", true},
		{"exec/team-a/web/0f3c-uid/app", "team-a", true},
		{"attach/team-a/web/app", "team-a", true},
		{"portForward/team-a/web", "team-a", true},
		{"portforward/team-a/web", "team-a", true},
		{"run/team-a/web/app", "team-a", true},
		{"containerLogs/team-a/web/app", "", false},
		{"checkpoint/team-a/web/app", "team-a", true},
		{"EXEC/team-a/web/app", "team-a", true},
		{"/exec/team-a/web/app/", "team-a", true},
		{"metrics/../exec/team-a/web/app", "team-a", true},
		{"./exec//team-a/web/app", "team-a", true},
		{"exec", "", true},
		{"exec/", "", true},
		{"", "", false},
		{"metrics", "", false},
		{"metrics/cadvisor", "", false},
		{"stats/summary", "", false},
		{"debug/pprof/profile", "", false},
		{"debug/flags/v", "", false},
		{"pods", "", false},
		{"logs/kubelet.log", "", false},
		{"execute/team-a/web", "", false},
	} {
		namespace, inPod := kubeletPod(tc.path)
		if namespace != tc.namespace || inPod != tc.inPod {
			t.Errorf("%q: namespace %q, in a pod %v; want %q, %v", tc.path, namespace, inPod, tc.namespace, tc.inPod)
		}
	}
}

// nodeUpstream serves discovery of nodes and pods, and answers every other request with 200, recording it.
func nodeUpstream(t *testing.T) (*httptest.Server, *recordingUpstream) {
	t.Helper()
	u := &recordingUpstream{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"kind":"APIResourceList","groupVersion":"v1","resources":[
				{"name":"nodes","namespaced":false,"kind":"Node","verbs":["get","list"]},
				{"name":"nodes/proxy","namespaced":false,"kind":"NodeProxyOptions","verbs":["create","delete","get","patch","update"]},
				{"name":"pods","namespaced":true,"kind":"Pod","verbs":["get","list"]}]}`)
			return
		}
		u.mu.Lock()
		u.seen = append(u.seen, r.Method+" "+r.URL.Path)
		u.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return srv, u
}

// A connection through a node's proxy into a pod (exec, attach, port-forward, run, a checkpoint) is fenced in the
// pod's namespace, whatever its verb, as the pod's own exec is; reading a container's logs through it is a read, as
// the pod's own log is; one to the node itself (its metrics, stats, profiles) is a request of a cluster-scoped
// object: read by any shard, changed only by the shard of cluster-scoped objects.
func TestConnectionsThroughANodeAreFenced(t *testing.T) {
	lower := shard.NewSet(shard.Range{First: 0, Last: 1<<63 - 1})
	ns0, ns1 := namespacesIn(lower) // shard 0's, shard 1's
	upstream, seen := nodeUpstream(t)
	shards := []*Proxy{}
	for id := range 2 {
		p, _ := proxyOwning(t, upstream, halvesOf(id))
		shards = append(shards, p)
	}
	const node = "/api/v1/nodes/node-1/proxy/"
	for _, tc := range []struct {
		method, path string
		websocket    bool
		want         [2]int // on shard 0, on shard 1
	}{
		{http.MethodGet, "exec/" + ns0 + "/web/app?command=sh&input=1&output=1", true, [2]int{200, 403}},
		{http.MethodGet, "exec/" + ns1 + "/web/app?command=sh", true, [2]int{403, 200}},
		{http.MethodPost, "exec/" + ns0 + "/web/app?command=sh", false, [2]int{200, 403}},
		{http.MethodGet, "attach/" + ns0 + "/web/app", true, [2]int{200, 403}},
		{http.MethodGet, "portForward/" + ns0 + "/web", true, [2]int{200, 403}},
		{http.MethodGet, "portforward/" + ns0 + "/web", true, [2]int{200, 403}},
		{http.MethodPost, "run/" + ns0 + "/web/app?cmd=sh", false, [2]int{200, 403}},
		{http.MethodGet, "containerLogs/" + ns0 + "/web/app?follow=true", false, [2]int{200, 200}},
		{http.MethodGet, "containerLogs/" + ns1 + "/web/app", false, [2]int{200, 200}},
		{http.MethodPost, "checkpoint/" + ns0 + "/web/app", false, [2]int{200, 403}},
		{http.MethodGet, "metrics/../exec/" + ns0 + "/web/app?command=sh", true, [2]int{200, 403}},
		{http.MethodGet, "exec?command=sh", true, [2]int{200, 403}},
		{http.MethodGet, "metrics", false, [2]int{200, 200}},
		{http.MethodGet, "stats/summary", false, [2]int{200, 200}},
		{http.MethodGet, "debug/pprof/heap", false, [2]int{200, 200}},
		{http.MethodPut, "debug/flags/v", false, [2]int{200, 403}},
	} {
		for id, p := range shards {
			r := httptest.NewRequest(tc.method, node+tc.path, strings.NewReader("5"))
			if tc.websocket {
				r.Header.Set("Connection", "Upgrade")
				r.Header.Set("Upgrade", "websocket")
			}
			w := httptest.NewRecorder()
			before := len(seen.requests())
			p.ServeHTTP(w, r)
			if w.Code != tc.want[id] {
				t.Errorf("shard %d: %s %s: %d, want %d (the API server was asked %q)", id, tc.method, tc.path, w.Code, tc.want[id], seen.requests()[before:])
			}
		}
	}
}

// Long-running is what the API server counts so (watches; exec, attach, port-forward, proxy and log subresources):
// every request through a node's proxy, a pod's logs (a followed log must not hold an in-flight slot or be slow to
// a breaker), whether or not it is fenced.
func TestLongRunningAsTheAPIServerCountsIt(t *testing.T) {
	for _, tc := range []struct {
		name        string
		req         Request
		longRunning bool
	}{
		{"an exec through a node", nodeProxy("get", "exec", "team-a", "web", "app"), true},
		{"a run through a node", nodeProxy("create", "run", "team-a", "web", "app"), true},
		{"a container's logs through a node", nodeProxy("get", "containerLogs", "team-a", "web", "app"), true},
		{"the node's metrics", nodeProxy("get", "metrics"), true},
		{"the node's log level changed", nodeProxy("update", "debug", "flags", "v"), true},
		{"a pod's exec", req(request.RequestInfo{Verb: "get", Resource: "pods", Subresource: "exec", Namespace: "team-a"}), true},
		{"a pod's logs", req(request.RequestInfo{Verb: "get", Resource: "pods", Subresource: "log", Namespace: "team-a"}), true},
		{"a service's proxy", req(request.RequestInfo{Verb: "get", Resource: "services", Subresource: "proxy", Namespace: "team-a"}), true},
		{"a watch", req(request.RequestInfo{Verb: "watch", Resource: "pods"}), true},
		{"a get", req(request.RequestInfo{Verb: "get", Resource: "pods", Namespace: "team-a", Name: "web"}), false},
		{"a pod's status", req(request.RequestInfo{Verb: "update", Resource: "pods", Subresource: "status", Namespace: "team-a", Name: "web"}), false},
	} {
		if got := tc.req.longRunning(); got != tc.longRunning {
			t.Errorf("%s: long-running %v, want %v", tc.name, got, tc.longRunning)
		}
	}
}
