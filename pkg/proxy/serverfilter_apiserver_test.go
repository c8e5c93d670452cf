package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/pkg/proxy/filter"
	"github.com/fedmesh/fedmesh/test/cluster"
)

// proxyInFrontOf starts a proxy in front of host enforcing the ownership document doc, and returns it and a client
// configuration through it.
func proxyInFrontOf(t *testing.T, host *cluster.Cluster, doc string) (*Proxy, *rest.Config) {
	t.Helper()
	store, _ := config.NewStore("")
	if err := store.Apply(config.KindOwnership, "1", []byte(doc)); err != nil {
		t.Fatal(err)
	}
	upstream := rest.CopyConfig(host.Config())
	upstream.BearerToken = ""
	p, err := New(Options{Host: upstream, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	via := rest.CopyConfig(host.Config())
	via.Host, via.TLSClientConfig = srv.URL, rest.TLSClientConfig{}
	return p, via
}

// getThrough sends a GET of path through the proxy of via, accepting accept.
func getThrough(ctx context.Context, t *testing.T, via *rest.Config, path, accept string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, via.Host+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", accept)
	req.Header.Set("Authorization", "Bearer "+via.BearerToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

const tableJSON = "application/json;as=Table;v=v1;g=meta.k8s.io"

// kube-apiserver v1.36.3 filters custom resources, Tables and metadata-only lists by shardSelector but gives them
// no shardInfo: the proxy judges them by their objects' namespaces and by a probe, and lets the server filter.
func TestServerFilteringSeenWhereListsCarryNoShardInfo(t *testing.T) {
	ctx := context.Background()
	host := hostWith(t, "a", "b")
	admin := host.Clientset()
	for ns, n := range map[string]int{"a": 2, "b": 3} {
		for i := range n {
			if _, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c" + string(rune('0'+i))}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	installWidgets(t, host, apiextensionsv1.NamespaceScoped)
	widgets := dynamic.NewForConfigOrDie(host.Config()).Resource(widgetsResource)
	for _, ns := range []string{"a", "b"} {
		if _, err := widgets.Namespace(ns).Create(ctx, newWidget("w-"+ns), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	configMaps := filter.ProbeKey{GroupResource: schema.GroupResource{Resource: "configmaps"}}
	owningA := shardOneOwning(1, rangesOf("a"), "")

	t.Run("metadata-only and Table lists keep the verdict", func(t *testing.T) {
		p, via := proxyInFrontOf(t, host, owningA)
		if _, err := kubernetes.NewForConfigOrDie(via).CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		if v := p.prober.Verdict(configMaps); v != filter.ServerFilters {
			t.Fatalf("after a list: %v, want server filters (the test API server has ShardedListAndWatch on)", v)
		}
		list, err := metadata.NewForConfigOrDie(via).Resource(corev1.SchemeGroupVersion.WithResource("configmaps")).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range list.Items {
			if it.Namespace != "a" {
				t.Errorf("a metadata-only list shows %s/%s", it.Namespace, it.Name)
			}
		}
		if v := p.prober.Verdict(configMaps); v != filter.ServerFilters {
			t.Errorf("after a metadata-only list: %v, want server filters still", v)
		}
		resp := getThrough(ctx, t, via, "/api/v1/configmaps", tableJSON)
		defer resp.Body.Close()
		var table metav1.Table
		if err := json.NewDecoder(resp.Body).Decode(&table); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("Table list: %s, %v", resp.Status, err)
		}
		if len(table.Rows) != 2 {
			t.Errorf("the Table lists %d ConfigMaps, want shard 1's 2", len(table.Rows))
		}
		if v := p.prober.Verdict(configMaps); v != filter.ServerFilters {
			t.Errorf("after a Table list (kubectl get -A): %v, want server filters still", v)
		}
	})

	t.Run("custom resources are filtered by the server", func(t *testing.T) {
		p, via := proxyInFrontOf(t, host, owningA)
		inf := dynamicinformer.NewFilteredDynamicInformer(dynamic.NewForConfigOrDie(via), widgetsResource, "", 0, cache.Indexers{}, nil)
		stop := make(chan struct{})
		defer close(stop)
		go inf.Informer().Run(stop)
		if !cache.WaitForCacheSync(stop, inf.Informer().HasSynced) {
			t.Fatal("the informer never synced")
		}
		if v := p.prober.Verdict(filter.ProbeKey{GroupResource: widgetsResource.GroupResource()}); v != filter.ServerFilters {
			t.Errorf("widgets after an informer's list: %v, want server filters", v)
		}
		for _, ns := range []string{"b", "b", "a"} {
			w := newWidget("")
			w.SetGenerateName("new-")
			if _, err := widgets.Namespace(ns).Create(ctx, w, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		store := inf.Informer().GetStore()
		if !eventually(10*time.Second, func() bool { return len(store.ListKeys()) == 2 }) {
			t.Fatalf("the informer holds %v, want shard 1's two widgets", store.ListKeys())
		}
		for _, key := range store.ListKeys() {
			if !strings.HasPrefix(key, "a/") {
				t.Errorf("the informer holds %s", key)
			}
		}
		// The proxy checks the events all the same (the next API server may not filter), and finds none to drop.
		if m := collected(t, p.metrics.watchEvents)["cluster=@host resource=example.com/widgets result=dropped"]; m != nil && m.GetCounter().GetValue() > 0 {
			t.Errorf("the proxy dropped %v watch events of other shards' widgets: the server was not asked to filter them", m.GetCounter().GetValue())
		}
	})

	serverMode := shardOneOwning(1, rangesOf("a"), `,"filterMode":"server"`)
	t.Run("server mode", func(t *testing.T) {
		// kubectl get -A's Table without objects, first of all: the server filtered it; no row needs its object.
		_, via := proxyInFrontOf(t, host, serverMode)
		resp := getThrough(ctx, t, via, "/api/v1/configmaps?includeObject=None", tableJSON)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var table metav1.Table
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &table) != nil || len(table.Rows) != 2 {
			t.Errorf("a Table without objects: %s %s; want shard 1's 2 rows", resp.Status, body)
		}
		_, via = proxyInFrontOf(t, host, serverMode)
		page, err := kubernetes.NewForConfigOrDie(via).CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if n := page.RemainingItemCount; n != nil && *n > 1 {
			t.Errorf("a page of 1 of shard 1's 2 ConfigMaps counts %d remaining: other shards' objects", *n)
		}
	})

	t.Run("a filtered Table watch passes the column definitions", func(t *testing.T) {
		_, via := proxyInFrontOf(t, host, shardOneOwning(1, rangesOf("a"), `,"filterMode":"client"`))
		now, err := admin.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		// From now on: no ADDED events of the objects there are, shard 1's first among them.
		resp := getThrough(wctx, t, via, "/api/v1/configmaps?watch=1&resourceVersion="+now.ResourceVersion, tableJSON)
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("watch: %s", resp.Status)
		}
		// The API server sends the definitions with its first event: here another shard's, which the proxy drops.
		for _, ns := range []string{"b", "a"} {
			if _, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "watched"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		lines := bufio.NewScanner(resp.Body)
		lines.Buffer(nil, 1<<20)
		for lines.Scan() {
			var ev struct {
				Type   string       `json:"type"`
				Object metav1.Table `json:"object"`
			}
			if err := json.Unmarshal(lines.Bytes(), &ev); err != nil {
				t.Fatal(err)
			}
			if ev.Type == "BOOKMARK" {
				continue
			}
			if len(ev.Object.ColumnDefinitions) == 0 {
				t.Errorf("the first event through the proxy has no column definitions: %s", lines.Bytes())
			}
			return
		}
		t.Fatalf("no event: %v", lines.Err())
	})
}
