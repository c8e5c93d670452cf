package proxy

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/pkg/shard"
	"github.com/fedmesh/fedmesh/test/cluster"
)

// proxiedCluster starts an API server with namespaces, and a proxy in front of it enforcing the ownership document
// doc. It returns an admin client straight to the API server, one through the proxy, and the proxy's store.
func proxiedCluster(t *testing.T, namespaces []string, doc string) (admin, viaProxy *kubernetes.Clientset, store *config.Store) {
	t.Helper()
	host := hostWith(t, namespaces...)
	viaProxy, store = proxyTo(t, host, doc)
	return host.Clientset(), viaProxy, store
}

// hostWith starts an API server with namespaces.
func hostWith(t *testing.T, namespaces ...string) *cluster.Cluster {
	t.Helper()
	host := cluster.New(t, cluster.Options{Name: "host"})
	for _, ns := range namespaces {
		if _, err := host.Clientset().CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return host
}

// proxyTo starts a proxy in front of host enforcing the ownership document doc, and returns a client through it
// and the proxy's store.
func proxyTo(t *testing.T, host *cluster.Cluster, doc string) (*kubernetes.Clientset, *config.Store) {
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
	return kubernetes.NewForConfigOrDie(via), store
}

// rangesOf is the set of the namespaces' hashes.
func rangesOf(nss ...string) shard.Set {
	var rs []shard.Range
	for _, ns := range nss {
		h := shard.NamespaceHash(ns)
		rs = append(rs, shard.Range{First: h, Last: h})
	}
	return shard.NewSet(rs...)
}

// shardOneOwning is an ownership document of shard 1 owning mine, shard 0 the rest and cluster-scoped objects;
// extra adds fields.
func shardOneOwning(epoch int, mine shard.Set, extra string) string {
	return fmt.Sprintf(`{"epoch":%d,"shard":1,"clusterScopedShard":0%s,"assignment":{"0":%q,"1":%q}}`, epoch, extra, mine.Complement(), mine)
}

// Access and token reviews store nothing: controller-runtime's authenticated metrics endpoint sends them on every
// scrape, from every shard.
func TestReviewsPassOnEveryShard(t *testing.T) {
	ctx := context.Background()
	_, viaProxy, _ := proxiedCluster(t, []string{"mine"}, shardOneOwning(1, rangesOf("mine"), ""))
	_, err := viaProxy.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "mine", Verb: "get", Resource: "configmaps"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Errorf("SelfSubjectAccessReview through shard 1's proxy: %v", err)
	}
	_, err = viaProxy.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{User: "someone", ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Errorf("SubjectAccessReview through shard 1's proxy: %v", err)
	}
	_, err = viaProxy.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: "not-a-token"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Errorf("TokenReview through shard 1's proxy: %v", err)
	}
}

// A resource the ShardingConfig does not shard is shown whole, in one namespace as across namespaces.
func TestUnshardedResourceInOneNamespaceIsShownWhole(t *testing.T) {
	ctx := context.Background()
	admin, viaProxy, _ := proxiedCluster(t, []string{"mine", "operators"},
		shardOneOwning(1, rangesOf("mine"), `,"resources":[{"group":"","resource":"secrets"}]`))
	if _, err := admin.CoreV1().ConfigMaps("operators").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "operator-config"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	all, err := viaProxy.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("configmaps across namespaces through the proxy: %d", len(all.Items))
	one, err := viaProxy.CoreV1().ConfigMaps("operators").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=operator-config"})
	if err != nil {
		t.Fatal(err)
	}
	if len(one.Items) != 1 {
		t.Errorf("configmaps (not sharded) of namespace operators through the proxy: %d items, want 1 (the list across namespaces shows it)", len(one.Items))
	}
}

// A watch from the resourceVersion of a list made before a grant must not go on as if the list had shown the
// granted namespace: the client gets the namespace's objects, or is told to list again.
func TestWatchAfterAGrantSinceItsListRelists(t *testing.T) {
	ctx := context.Background()
	admin, viaProxy, store := proxiedCluster(t, []string{"mine", "granted"}, shardOneOwning(1, rangesOf("mine"), ""))
	if _, err := admin.CoreV1().ConfigMaps("granted").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "waiting"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	list, err := viaProxy.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range list.Items {
		if cm.Namespace == "granted" {
			t.Fatalf("listed %s/%s before the grant", cm.Namespace, cm.Name)
		}
	}
	if err := store.Apply(config.KindOwnership, "2", []byte(shardOneOwning(2, rangesOf("mine", "granted"), ""))); err != nil {
		t.Fatal(err)
	}
	w, err := viaProxy.CoreV1().ConfigMaps("").Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case ev := <-w.ResultChan():
			if ev.Type == watch.Error {
				return // told to relist: fine
			}
			if cm, ok := ev.Object.(*corev1.ConfigMap); ok && cm.Namespace == "granted" {
				return
			}
		case <-timeout:
			t.Fatalf("granted/waiting, in a namespace shard 1 now owns, never reached the client: listed under the old ranges, watched under the new ones from the list's resourceVersion, and no 410 to relist")
		}
	}
}
