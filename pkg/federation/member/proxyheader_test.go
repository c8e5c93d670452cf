package member

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/fedmesh/fedmesh/pkg/apis"
	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	"github.com/fedmesh/fedmesh/test/egress"
)

// proxyHeaders are the X-Proxy-Token and X-Route values of each request p was sent.
func proxyHeaders(p *egress.Proxy) [][]string {
	var out [][]string
	for _, r := range p.Requests() {
		out = append(out, append(r.Header.Values(egress.TokenHeader), r.Header.Values("X-Route")...))
	}
	return out
}

// proxiedClusters is a fake host with a Cluster and its Secret for each name, reaching api through proxy with
// the proxyHeader headers[name].
func proxiedClusters(t *testing.T, api, proxy string, headers map[string]map[string]string) client.WithWatch {
	t.Helper()
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = apis.AddToScheme(s)
	b := fake.NewClientBuilder().WithScheme(s)
	for name, h := range headers {
		b.WithObjects(&clusterv1alpha1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: clusterv1alpha1.ClusterSpec{APIEndpoint: api, InsecureSkipTLSVerification: true,
				ProxyURL: proxy, ProxyHeader: h,
				SecretRef: &clusterv1alpha1.LocalSecretReference{Namespace: "fedmesh-system", Name: name}},
		}, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "fedmesh-system", Name: name},
			Data: map[string][]byte{clusterv1alpha1.SecretTokenKey: []byte("t")}})
	}
	return b.Build()
}

// Cluster.spec.proxyHeader ("HTTP headers to send to the proxy") reaches the proxy named by spec.proxyURL on its
// CONNECT, each cluster's own: a proxy that wants an auth header refuses the connection without it, and a cluster
// must never send another's (they may be credentials).
func TestProxyHeaderReachesTheProxy(t *testing.T) {
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"major":"1","minor":"36","gitVersion":"v1.36.0"}`)
	}))
	defer api.Close()
	proxy := egress.Start(t, "s3cret")
	fc := proxiedClusters(t, api.URL, proxy.URL, map[string]map[string]string{
		"member1": {"X-Proxy-Token": "s3cret", "x-route": "eu,blue"},
		"member2": {"X-Proxy-Token": "other"},
	})
	f := &Factory{Host: fc}
	ctx := context.Background()

	mc, err := f.Client(ctx, "member1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mc.Kubernetes.Discovery().ServerVersion(); err != nil {
		t.Errorf("member1 through spec.proxyURL with spec.proxyHeader: %v (the proxy saw %q)", err, proxyHeaders(proxy))
	}
	if diff := cmp.Diff([][]string{{"s3cret", "eu", "blue"}}, proxyHeaders(proxy)); diff != "" {
		t.Errorf("headers the proxy saw for member1 (-want +got):\n%s", diff)
	}

	other, err := f.Client(ctx, "member2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Kubernetes.Discovery().ServerVersion(); err == nil {
		t.Error("member2, whose proxy header the proxy refuses, was reached")
	}
	got := proxyHeaders(proxy)
	if len(got) < 2 {
		t.Fatalf("the proxy saw %q; want member2's CONNECT too", got)
	}
	for _, h := range got[1:] {
		if !cmp.Equal(h, []string{"other"}) {
			t.Errorf("the proxy saw %q from member2; want its own header only", h)
		}
	}
}

// A changed spec.proxyHeader makes a new client; what the client is cached by holds no header value.
func TestFactoryRebuildsClientsWhenProxyHeaderChanges(t *testing.T) {
	fc := proxiedClusters(t, "https://127.0.0.1:6443", "http://127.0.0.1:3128",
		map[string]map[string]string{"member1": {"X-Proxy-Token": "s3cret"}})
	f := &Factory{Host: fc}
	ctx := context.Background()
	first, err := f.Client(ctx, "member1")
	if err != nil {
		t.Fatal(err)
	}
	if spec := f.clients["member1"].clusterSpec; strings.Contains(spec, "s3cret") {
		t.Errorf("the client is cached by %q, which holds the header's value", spec)
	}
	var c clusterv1alpha1.Cluster
	if err := fc.Get(ctx, client.ObjectKey{Name: "member1"}, &c); err != nil {
		t.Fatal(err)
	}
	c.Spec.ProxyHeader["X-Proxy-Token"] = "rotated"
	if err := fc.Update(ctx, &c); err != nil {
		t.Fatal(err)
	}
	if again, err := f.Client(ctx, "member1"); err != nil || again == first {
		t.Errorf("after spec.proxyHeader changed: same client %t (%v); want a new one", again == first, err)
	}
}

// Through the fedmesh proxy (Factory.ProxyConfig) the member's own proxy is not used, nor are its headers sent.
func TestProxyHeaderNotSentToTheFedmeshProxy(t *testing.T) {
	fc := proxiedClusters(t, "https://127.0.0.1:6443", "http://127.0.0.1:3128",
		map[string]map[string]string{"member1": {"X-Proxy-Token": "s3cret"}})
	f := &Factory{Host: fc, ProxyConfig: &rest.Config{Host: "https://127.0.0.1:5443"}}
	mc, err := f.Client(context.Background(), "member1")
	if err != nil {
		t.Fatal(err)
	}
	if mc.Config.Proxy != nil || mc.Config.WrapTransport != nil {
		t.Errorf("through the fedmesh proxy: Proxy set %t, WrapTransport set %t; want neither",
			mc.Config.Proxy != nil, mc.Config.WrapTransport != nil)
	}
}
