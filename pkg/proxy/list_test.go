package proxy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/pkg/shard"
)

// listUpstream answers discovery and pod lists: each list is written by write, with the shardSelector the
// proxy sent.
func listUpstream(t *testing.T, write func(w http.ResponseWriter, selector string)) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v1":
			io.WriteString(w, `{"kind":"APIResourceList","groupVersion":"v1","resources":[{"name":"pods","namespaced":true,"kind":"Pod","verbs":["list","watch"]}]}`)
		case "/api/v1/pods":
			write(w, r.URL.Query().Get("shardSelector"))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// serverModeProxy fronts upstream as a shard that owns the lower half of the hash space, in server mode.
func serverModeProxy(t *testing.T, upstream *httptest.Server) (*httptest.Server, shard.Set) {
	t.Helper()
	owned := shard.NewSet(shard.Range{First: 0, Last: 1<<63 - 1})
	store, err := config.NewStore("")
	if err != nil {
		t.Fatal(err)
	}
	own := fmt.Sprintf(`{"shard": 0, "filterMode": "server", "assignment": {"0": %q, "1": %q}}`, owned, owned.Complement())
	if err := store.Apply(config.KindOwnership, "1", []byte(own)); err != nil {
		t.Fatal(err)
	}
	p, err := New(Options{Host: &rest.Config{Host: upstream.URL}, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv, owned
}

// namespacesIn returns a namespace that owned holds and one it does not.
func namespacesIn(owned shard.Set) (in, out string) {
	for i := 0; in == "" || out == ""; i++ {
		ns := fmt.Sprintf("ns-%d", i)
		if owned.ContainsNamespace(ns) {
			in = ns
		} else {
			out = ns
		}
	}
	return in, out
}

func podItem(ns, name string) string {
	return `{"metadata":{"name":"` + name + `","namespace":"` + ns + `"}}`
}

// A list the API server filtered streams through: the client has its start while the API server still writes.
func TestServerFilteredListStreams(t *testing.T) {
	more := make(chan struct{})
	upstream := listUpstream(t, func(w http.ResponseWriter, selector string) {
		fmt.Fprintf(w, `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9","shardInfo":{"selector":%q}},"items":[%s`,
			selector, podItem("a", "first"))
		w.(http.Flusher).Flush()
		select {
		case <-more:
		case <-time.After(5 * time.Second):
		}
		io.WriteString(w, ","+podItem("b", "second")+"]}\n")
	})
	srv, _ := serverModeProxy(t, upstream)
	var resp *http.Response
	got := make(chan error)
	go func() { // the response's headers come only with the start of its body
		var err error
		if resp, err = http.Get(srv.URL + "/api/v1/pods"); err == nil {
			_, err = io.ReadFull(resp.Body, make([]byte, len(`{"kind":"PodList"`)))
		}
		got <- err
	}()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the proxy holds the list until the API server has written all of it")
	}
	defer resp.Body.Close()
	close(more)
	rest, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(rest), podItem("b", "second")+"]}\n") {
		t.Errorf("the list ends %q", rest)
	}
}

// When the list shows no shardInfo, or its items come before its metadata, the proxy reads it whole: it filters a
// list the server did not filter, and passes one that the server did, unchanged.
func TestServerModeListFallbacks(t *testing.T) {
	var mine, foreign string
	for _, tc := range []struct {
		name  string
		list  func(selector string) string
		names []string
	}{
		{"no shardInfo", func(string) string {
			return `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9"},"items":[` +
				podItem(mine, "a") + "," + podItem(foreign, "b") + "]}\n"
		}, []string{"a"}},
		{"another selector", func(string) string {
			return `{"kind":"PodList","apiVersion":"v1","metadata":{"shardInfo":{"selector":"shardRange(object.metadata.namespace, '0x0', '0x1')"}},"items":[` +
				podItem(mine, "a") + "," + podItem(foreign, "b") + "]}\n"
		}, []string{"a"}},
		{"items first", func(selector string) string {
			return `{"apiVersion":"v1","items":[` + podItem(mine, "a") + "," + podItem(mine, "c") +
				`],"kind":"PodList","metadata":{"shardInfo":{"selector":"` + selector + `"}}}` + "\n"
		}, []string{"a", "c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			upstream := listUpstream(t, func(w http.ResponseWriter, selector string) { io.WriteString(w, tc.list(selector)) })
			srv, owned := serverModeProxy(t, upstream)
			mine, foreign = namespacesIn(owned)
			resp, err := http.Get(srv.URL + "/api/v1/pods")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var list struct {
				Items []struct{ Metadata struct{ Name string } }
			}
			if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, it := range list.Items {
				names = append(names, it.Metadata.Name)
			}
			if strings.Join(names, ",") != strings.Join(tc.names, ",") {
				t.Errorf("items %v, want %v", names, tc.names)
			}
		})
	}
}

// A custom resource's lists carry no shardInfo, so a list the server filtered to the shard's namespaces looks like
// one of an upstream that ignores shardSelector. Before a watch, the probe asks, at one resourceVersion, for one
// object, then for every namespace but that object's: an upstream that ignores shardSelector answers with the same
// object, and the proxy filters the watch itself.
func TestProbeFindsAnUpstreamIgnoringShardSelector(t *testing.T) {
	var mine, foreign string
	var mu sync.Mutex
	var lists []url.Values
	widget := func(ns string) string {
		return `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"` + ns + `"}}`
	}
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch q := r.URL.Query(); {
		case r.URL.Path == "/apis/example.com/v1":
			io.WriteString(w, `{"kind":"APIResourceList","groupVersion":"example.com/v1","resources":[{"name":"widgets","namespaced":true,"kind":"Widget","verbs":["list","watch"]}]}`)
		case r.URL.Path != "/apis/example.com/v1/widgets":
			http.NotFound(w, r)
		case q.Get("watch") == "1":
			fmt.Fprintf(w, "{\"type\":\"ADDED\",\"object\":%s}\n{\"type\":\"ADDED\",\"object\":%s}\n", widget(foreign), widget(mine))
		default: // one object, the shard's own, whatever the shardSelector
			mu.Lock()
			lists = append(lists, q)
			mu.Unlock()
			io.WriteString(w, `{"apiVersion":"example.com/v1","items":[`+widget(mine)+`],"kind":"WidgetList","metadata":{"resourceVersion":"7"}}`)
		}
	}))
	t.Cleanup(upstream.Close)
	srv, owned := serverModeProxy(t, upstream)
	mine, foreign = namespacesIn(owned)

	resp, err := http.Get(srv.URL + "/apis/example.com/v1/widgets?watch=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var namespaces []string
	for lines := bufio.NewScanner(resp.Body); lines.Scan(); {
		var ev struct {
			Object struct{ Metadata struct{ Namespace string } }
		}
		if err := json.Unmarshal(lines.Bytes(), &ev); err != nil {
			t.Fatalf("%v: %s", err, lines.Bytes())
		}
		namespaces = append(namespaces, ev.Object.Metadata.Namespace)
	}
	if strings.Join(namespaces, ",") != mine {
		t.Errorf("the watch shows objects of %v, want only %s's", namespaces, mine)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(lists) != 2 {
		t.Fatalf("the proxy probed with %d lists, want 2: %v", len(lists), lists)
	}
	if first, second := lists[0], lists[1]; first.Get("shardSelector") != "" || second.Get("resourceVersion") != "7" ||
		second.Get("resourceVersionMatch") != "Exact" || second.Get("shardSelector") == "" || second.Get("limit") != "1" {
		t.Errorf("probe lists %v then %v: want one object without a shardSelector, then one at its resourceVersion exactly with one", first, second)
	}
}
