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
	"sync/atomic"
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

// kubectl get -A asks for a Table whose rows carry no objects (includeObject=None), so they tell no namespace, and
// Tables carry no shardInfo. Once the verdict is "server filters" (from a plain list), such a Table from an API
// server of the HA set that does not filter must still show only the shard's rows: the proxy asks for the rows'
// objects' metadata, judges the rows by them, and leaves the objects out, as kubectl asked.
func TestTableWithoutObjectsIsJudgedByItsRows(t *testing.T) {
	var mine, foreign string
	var asked []string
	var mu sync.Mutex
	upstream := listUpstream(t, func(w http.ResponseWriter, selector string) {
		fmt.Fprintf(w, `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9","shardInfo":{"selector":%q}},"items":[%s]}`,
			selector, podItem(mine, "p"))
	})
	plain := upstream.Config.Handler
	upstream.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Accept"), "as=Table") {
			plain.ServeHTTP(w, r)
			return
		}
		// The older API server of the pair: it ignores shardSelector.
		include := r.URL.Query().Get("includeObject")
		mu.Lock()
		asked = append(asked, include)
		mu.Unlock()
		row := func(ns string) string {
			if include == "None" {
				return fmt.Sprintf(`{"cells":["p-%s"]}`, ns)
			}
			return fmt.Sprintf(`{"cells":["p-%s"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"p-%s","namespace":%q}}}`, ns, ns, ns)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"9"},"columnDefinitions":[{"name":"Name","type":"string"}],"rows":[%s,%s]}`, row(mine), row(foreign))
	})
	srv, owned := serverModeProxy(t, upstream)
	mine, foreign = namespacesIn(owned)

	resp, err := http.Get(srv.URL + "/api/v1/pods") // the verdict: server filters
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/pods?includeObject=None", nil)
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var table struct {
		Rows []map[string]json.RawMessage
	}
	if err := json.NewDecoder(resp.Body).Decode(&table); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("Table: %s, %v", resp.Status, err)
	}
	if len(table.Rows) != 1 || string(table.Rows[0]["cells"]) != `["p-`+mine+`"]` {
		t.Errorf("rows %s, want only p-%s's (the shard owns %s, not %s)", table.Rows, mine, mine, foreign)
	}
	for _, row := range table.Rows {
		if _, ok := row["object"]; ok {
			t.Errorf("a row carries its object, which kubectl asked to leave out: %s", row["object"])
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(asked, ",") != "Metadata" {
		t.Errorf("the upstream was asked for Tables with includeObject %q, want Metadata", asked)
	}
}

// An API server seen to filter (its list echoed the shardSelector) may not be the one that answers the next watch:
// the proxy checks the watch's events all the same, drops another shard's, and from then on knows that the server
// does not filter, so that lists are judged again.
func TestWatchOfAServerSeenToFilterIsChecked(t *testing.T) {
	var mine, foreign, listSelector, watchSelector string
	upstream := listUpstream(t, func(w http.ResponseWriter, selector string) {
		listSelector = selector
		fmt.Fprintf(w, `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9","shardInfo":{"selector":%q}},"items":[%s]}`,
			selector, podItem(mine, "p"))
	})
	lists := upstream.Config.Handler
	upstream.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") != "1" {
			lists.ServeHTTP(w, r)
			return
		}
		watchSelector = r.URL.Query().Get("shardSelector")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "{\"type\":\"ADDED\",\"object\":%s}\n{\"type\":\"ADDED\",\"object\":%s}\n", podItem(foreign, "theirs"), podItem(mine, "ours"))
	})
	srv, owned := serverModeProxy(t, upstream)
	mine, foreign = namespacesIn(owned)
	get := func(path string) []byte {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return body
	}
	get("/api/v1/pods") // the verdict: server filters

	var names []string
	for line := range strings.Lines(string(get("/api/v1/pods?watch=1&resourceVersion=9"))) {
		var ev struct {
			Object struct{ Metadata struct{ Name string } }
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		names = append(names, ev.Object.Metadata.Name)
	}
	if watchSelector == "" {
		t.Error("the watch was sent without a shardSelector: want the server asked to filter")
	}
	if strings.Join(names, ",") != "ours" {
		t.Errorf("the watch shows %v, want only ours (the shard owns %s, not %s)", names, mine, foreign)
	}
	get("/api/v1/pods")
	if listSelector != "" {
		t.Errorf("after the watch showed another shard's pod, a list was asked with shardSelector %q: want it asked for everything and filtered in the proxy", listSelector)
	}
}

// An empty collection of a custom resource shows nothing of whether the server filters (no object to probe with,
// no shardInfo): lists of it pass as they are, costing no probe, and a probe that told nothing is not repeated for
// each watch.
func TestEmptyCustomResourceIsNotProbedOnEveryRequest(t *testing.T) {
	var lists atomic.Int32
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch q := r.URL.Query(); {
		case r.URL.Path == "/apis/example.com/v1":
			io.WriteString(w, `{"kind":"APIResourceList","groupVersion":"example.com/v1","resources":[{"name":"widgets","namespaced":true,"kind":"Widget","verbs":["list","watch"]}]}`)
		case r.URL.Path != "/apis/example.com/v1/widgets":
			http.NotFound(w, r)
		case q.Get("watch") == "1":
		default:
			lists.Add(1)
			io.WriteString(w, `{"apiVersion":"example.com/v1","items":[],"kind":"WidgetList","metadata":{"resourceVersion":"7"}}`)
		}
	}))
	t.Cleanup(upstream.Close)
	srv, _ := serverModeProxy(t, upstream)
	get := func(path string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s", path, resp.Status)
		}
	}
	for range 10 {
		get("/apis/example.com/v1/widgets")
		get("/apis/example.com/v1/widgets?watch=1&resourceVersion=7")
	}
	if n := lists.Load(); n != 10+1 {
		t.Errorf("10 lists and 10 watches of an empty collection cost %d upstream lists, want 10 and one probe", n)
	}
}

// kubectl get -A -w asks for a Table watch whose rows carry no objects. The proxy checks watch events even where the
// server filters, so it asks for the rows' objects' metadata, keeps the shard's rows, and leaves the objects out.
func TestTableWatchWithoutObjectsIsJudgedByItsRows(t *testing.T) {
	var mine, foreign, include string
	upstream := listUpstream(t, func(w http.ResponseWriter, selector string) {
		fmt.Fprintf(w, `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9","shardInfo":{"selector":%q}},"items":[]}`, selector)
	})
	lists := upstream.Config.Handler
	upstream.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") != "1" {
			lists.ServeHTTP(w, r)
			return
		}
		include = r.URL.Query().Get("includeObject")
		w.Header().Set("Content-Type", "application/json")
		for _, ns := range []string{foreign, mine} {
			fmt.Fprintf(w, `{"type":"ADDED","object":{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"9"},"columnDefinitions":[{"name":"Name","type":"string"}],"rows":[{"cells":["p-%s"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"p-%s","namespace":%q}}}]}}`+"\n", ns, ns, ns)
		}
	})
	srv, owned := serverModeProxy(t, upstream)
	mine, foreign = namespacesIn(owned)
	resp, err := http.Get(srv.URL + "/api/v1/pods") // the verdict: server filters
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/pods?watch=1&resourceVersion=9&includeObject=None", nil)
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rows []string
	for lines := bufio.NewScanner(resp.Body); lines.Scan(); {
		var ev struct {
			Object struct{ Rows []map[string]json.RawMessage }
		}
		if err := json.Unmarshal(lines.Bytes(), &ev); err != nil {
			t.Fatalf("%v: %s", err, lines.Bytes())
		}
		for _, row := range ev.Object.Rows {
			rows = append(rows, string(row["cells"]))
			if _, ok := row["object"]; ok {
				t.Errorf("a row carries its object, which kubectl asked to leave out: %s", row["object"])
			}
		}
	}
	if strings.Join(rows, ",") != `["p-`+mine+`"]` {
		t.Errorf("rows %v, want only p-%s's (the shard owns %s, not %s)", rows, mine, mine, foreign)
	}
	if include != "Metadata" {
		t.Errorf("the watch was asked upstream with includeObject %q, want Metadata", include)
	}
}
