package proxy

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/pkg/shard"
	"github.com/fedmesh/fedmesh/test/cluster"
)

var widgetsResource = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

// installWidgets (re)creates the widgets CRD in scope, and waits until the API server serves it so.
func installWidgets(t *testing.T, host *cluster.Cluster, scope apiextensionsv1.ResourceScope) {
	t.Helper()
	ctx := context.Background()
	crds := apiextensionsclient.NewForConfigOrDie(host.Config()).ApiextensionsV1().CustomResourceDefinitions()
	if err := crds.Delete(ctx, "widgets.example.com", metav1.DeleteOptions{}); err == nil {
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := crds.Get(ctx, "widgets.example.com", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	preserve := true
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: scope,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve}}}},
		},
	}
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	widgets := dynamic.NewForConfigOrDie(host.Config()).Resource(widgetsResource)
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if _, err := widgets.List(ctx, metav1.ListOptions{}); err != nil {
			return false, nil
		}
		_, err := widgets.Namespace("default").List(ctx, metav1.ListOptions{}) // served only for a namespaced CRD
		return (err == nil) == (scope == apiextensionsv1.NamespaceScoped), nil
	}); err != nil {
		t.Fatal(err)
	}
}

func newWidget(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("example.com/v1")
	u.SetKind("Widget")
	u.SetName(name)
	return u
}

// widgetsThrough starts a proxy of shard id (halvesOf) in front of host, its scopes read on clock, and returns a
// client of widgets through it.
func widgetsThrough(t *testing.T, host *cluster.Cluster, id int, clock *testClock) dynamic.NamespaceableResourceInterface {
	t.Helper()
	store, _ := config.NewStore("")
	if err := store.Apply(config.KindOwnership, "1", []byte(halvesOf(id))); err != nil {
		t.Fatal(err)
	}
	upstream := rest.CopyConfig(host.Config())
	upstream.BearerToken = ""
	p, err := New(Options{Host: upstream, Store: store, RelistBound: -1})
	if err != nil {
		t.Fatal(err)
	}
	p.scopes.now = clock.Now
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	via := rest.CopyConfig(host.Config())
	via.Host, via.TLSClientConfig = srv.URL, rest.TLSClientConfig{}
	return dynamic.NewForConfigOrDie(via).Resource(widgetsResource)
}

// A CRD deleted and recreated with the other scope (an operator's upgrade) is fenced and listed by its new scope
// through proxies that learned the old one: recreated cluster-scoped, only the shard of cluster-scoped objects
// creates its objects, and the API server's answer to it has its proxy list them as cluster-scoped; recreated
// namespaced, once the bound has passed, a list across namespaces shows each shard its own namespaces' objects.
func TestRecreatedCRDFencedByItsNewScope(t *testing.T) {
	ctx := context.Background()
	lower := shard.NewSet(shard.Range{First: 0, Last: 1<<63 - 1})
	_, theirs := namespacesIn(lower) // shard 1's
	host := hostWith(t, theirs)
	clock := &testClock{now: time.Unix(1000, 0)}
	installWidgets(t, host, apiextensionsv1.NamespaceScoped)
	shard0, shard1 := widgetsThrough(t, host, 0, clock), widgetsThrough(t, host, 1, clock)
	for _, c := range []dynamic.NamespaceableResourceInterface{shard0, shard1} {
		if _, err := c.List(ctx, metav1.ListOptions{}); err != nil { // each learns widgets are namespaced
			t.Fatal(err)
		}
	}

	installWidgets(t, host, apiextensionsv1.ClusterScoped)
	clock.step(scopeRecheckMin)
	if _, err := shard1.Create(ctx, newWidget("from-shard-1"), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("shard 1, which does not own cluster-scoped objects, creating a cluster-scoped Widget: %v, want Forbidden", err)
	}
	if _, err := shard0.Create(ctx, newWidget("from-shard-0"), metav1.CreateOptions{}); err != nil {
		t.Errorf("shard 0, which owns cluster-scoped objects, creating a cluster-scoped Widget: %v", err)
	}
	// The API server's answer showed widgets cluster-scoped: shard 0 lists them whole, as cluster-scoped objects.
	if list, err := shard0.List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 1 {
		t.Errorf("shard 0 lists cluster-scoped widgets: %v, want from-shard-0 (%v)", list, err)
	}

	installWidgets(t, host, apiextensionsv1.NamespaceScoped)
	if _, err := dynamic.NewForConfigOrDie(host.Config()).Resource(widgetsResource).Namespace(theirs).Create(ctx, newWidget("theirs"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	clock.step(scopeBound)
	for id, tc := range []struct {
		widgets dynamic.NamespaceableResourceInterface
		want    int
	}{{shard0, 0}, {shard1, 1}} {
		list, err := tc.widgets.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != tc.want {
			var names []string
			for _, it := range list.Items {
				names = append(names, it.GetNamespace()+"/"+it.GetName())
			}
			t.Errorf("shard %d lists widgets %q across namespaces, want %d (the one in %s is shard 1's)", id, names, tc.want, theirs)
		}
	}
}
