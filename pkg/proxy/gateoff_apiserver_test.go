package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/fedmesh/fedmesh/pkg/proxy/filter"
)

var configMapsResource = corev1.SchemeGroupVersion.WithResource("configmaps")

// The proxy learned that the API server filters ConfigMaps (a list's shardInfo) and widgets (a probe); then the
// API server answering it no longer does: one of an HA set older, or with the gate off (here the same one
// restarted with the gate off). Informers' watches reconnecting without a list must show the shard none of another
// shard's objects, and the proxy learns from them that the server does not filter.
func TestWatchesAreCheckedAfterTheServerStopsFiltering(t *testing.T) {
	ctx := context.Background()
	host := hostWith(t, "a", "b")
	installWidgets(t, host, apiextensionsv1.NamespaceScoped)
	admin := dynamic.NewForConfigOrDie(host.Config())
	resources := map[string]schema.GroupVersionResource{"widgets": widgetsResource, "configmaps": configMapsResource}
	object := func(gvr schema.GroupVersionResource, name string) *unstructured.Unstructured {
		if gvr == widgetsResource {
			return newWidget(name)
		}
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("ConfigMap")
		u.SetName(name)
		return u
	}
	for _, gvr := range resources {
		for _, ns := range []string{"a", "b"} {
			if _, err := admin.Resource(gvr).Namespace(ns).Create(ctx, object(gvr, "w-"+ns), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	p, via := proxyInFrontOf(t, host, shardOneOwning(1, rangesOf("a"), ""))
	for name, gvr := range resources {
		list, err := dynamic.NewForConfigOrDie(via).Resource(gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// An informer's first watch: a widget's list tells nothing (no shardInfo, only shard 1's objects), its
		// probe does.
		wctx, cancel := context.WithCancel(ctx)
		resp := getThrough(wctx, t, via, watchPath(gvr, list.GetResourceVersion()), "application/json")
		cancel()
		resp.Body.Close()
		if v := p.prober.Verdict(filter.ProbeKey{GroupResource: gvr.GroupResource()}); v != filter.ServerFilters {
			t.Fatalf("%s before the restart: %v, want server filters (the test API server has the gate on)", name, v)
		}
	}

	if err := host.RestartAPIServerWithShardedListWatch(ctx, false); err != nil {
		t.Fatal(err)
	}
	for name, gvr := range resources {
		t.Run(name, func(t *testing.T) {
			now, err := admin.Resource(gvr).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			resp := getThrough(wctx, t, via, watchPath(gvr, now.GetResourceVersion()), "application/json")
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("watch: %s", resp.Status)
			}
			for _, ns := range []string{"b", "a"} {
				if _, err := admin.Resource(gvr).Namespace(ns).Create(ctx, object(gvr, "late-"+ns), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			for _, seen := range watchedUntil(t, resp, "late-a") {
				if seen.Namespace != "a" {
					t.Errorf("shard 1 (owning a) was shown %s/%s", seen.Namespace, seen.Name)
				}
			}
			if v := p.prober.Verdict(filter.ProbeKey{GroupResource: gvr.GroupResource()}); v != filter.ServerDoesNotFilter {
				t.Errorf("after another shard's event: %v, want server does not filter", v)
			}
		})
	}
}

// watchPath is the path of a watch of gvr across namespaces from resourceVersion.
func watchPath(gvr schema.GroupVersionResource, resourceVersion string) string {
	base := "/api/" + gvr.Version
	if gvr.Group != "" {
		base = "/apis/" + gvr.Group + "/" + gvr.Version
	}
	return base + "/" + gvr.Resource + "?watch=1&allowWatchBookmarks=true&resourceVersion=" + resourceVersion
}

// watchedUntil reads a JSON watch until the object named last, and returns the objects of its events but
// bookmarks.
func watchedUntil(t *testing.T, resp *http.Response, last string) []metav1.ObjectMeta {
	t.Helper()
	var seen []metav1.ObjectMeta
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		var ev struct {
			Type   string
			Object struct{ Metadata metav1.ObjectMeta }
		}
		if err := json.Unmarshal(lines.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type == "BOOKMARK" {
			continue
		}
		seen = append(seen, ev.Object.Metadata)
		if ev.Object.Metadata.Name == last {
			return seen
		}
	}
	t.Fatalf("the watch ended before %s: %v (seen %v)", last, lines.Err(), seen)
	return nil
}
