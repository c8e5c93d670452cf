package sharding

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/pkg/xds"
)

// A member's Secret that cannot be read for a moment keeps the member in the proxies' configuration with the CA
// read before: leaving it out would cut every shard off it. A Secret that is gone leaves it out.
func TestMemberClustersSurviveAFailedSecretRead(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, clusterv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	member := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"},
		Spec: clusterv1alpha1.ClusterSpec{APIEndpoint: "https://127.0.0.1:6443",
			SecretRef: &clusterv1alpha1.LocalSecretReference{Namespace: "fed", Name: "member1"}}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "fed", Name: "member1"},
		Data: map[string][]byte{clusterv1alpha1.SecretCADataKey: []byte("CA")}}
	var secretErr error
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(member, secret).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if key.Name == "member1" && secretErr != nil {
				return secretErr
			}
			return c.Get(ctx, key, obj, opts...)
		}}).Build()
	r := &Reconciler{Client: c}
	ctx := context.Background()

	// Never read, and failing: that member waits (to be looked at again soon), not the reconcile.
	secretErr = apierrors.NewInternalError(errors.New("etcd leader changed"))
	if got, unread, err := r.memberClusters(ctx); err != nil || len(got) != 0 || !unread {
		t.Fatalf("a Secret never read, and failing: members %+v, unread %v, %v; want none, unread", got, unread, err)
	}
	secretErr = nil
	got, unread, err := r.memberClusters(ctx)
	if err != nil || unread || len(got) != 1 || string(got[0].CAData) != "CA" {
		t.Fatalf("members %+v, unread %v, %v; want member1 with its CA", got, unread, err)
	}
	secretErr = apierrors.NewInternalError(errors.New("etcd leader changed"))
	if got, unread, err := r.memberClusters(ctx); err != nil || unread || len(got) != 1 || string(got[0].CAData) != "CA" {
		t.Errorf("after a failed read: members %+v, unread %v, %v; want member1 with the CA read before", got, unread, err)
	}
	secretErr = apierrors.NewNotFound(corev1.Resource("secrets"), "member1")
	if got, _, err := r.memberClusters(ctx); err != nil || len(got) != 0 {
		t.Errorf("Secret gone: members %+v, %v; want none", got, err)
	}
}

// A Cluster being deleted stays in the proxies' configuration until it is gone: the federator takes its Works'
// objects off the member through them meanwhile.
func TestMemberClustersKeepALeavingCluster(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, clusterv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	now := metav1.Now()
	leaving := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member2", DeletionTimestamp: &now,
		Finalizers: []string{"cluster.fedmesh.io/unjoin"}}, Spec: clusterv1alpha1.ClusterSpec{APIEndpoint: "https://127.0.0.1:6444"}}
	r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(leaving).Build()}
	got, _, err := r.memberClusters(context.Background())
	if err != nil || len(got) != 1 || got[0].Name != "member2" {
		t.Fatalf("members %+v, %v; want member2, being deleted", got, err)
	}
}

// Behind the mesh proxy the federator reaches a member only through the proxies, so they are told the way to it:
// the Cluster's proxyURL and proxyHeader reach the published document, and the proxies take it. A member that skips
// TLS verification, which the proxies never do, and one whose proxy they would refuse, are left out, each told once
// on its Cluster with a reason of its own; the others stay.
func TestMemberClustersCarryTheirProxy(t *testing.T) {
	cluster := func(name string, edit func(*clusterv1alpha1.ClusterSpec)) *clusterv1alpha1.Cluster {
		c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push, APIEndpoint: "https://10.0.0.1:6443"}}
		edit(&c.Spec)
		return c
	}
	// The federator's ShardingConfig, in fedmesh's namespace, and a tenant's operator in its own.
	fed, tenant := testConfig(1), testConfig(1)
	fed.Namespace = names.SystemNamespace
	c := storedClient(t, fed, tenant,
		cluster("proxied", func(s *clusterv1alpha1.ClusterSpec) {
			s.ProxyURL, s.ProxyHeader = "http://egress.example:3128", map[string]string{"X-Proxy-Token": "s3cret"}
		}),
		cluster("direct", func(*clusterv1alpha1.ClusterSpec) {}),
		cluster("insecure", func(s *clusterv1alpha1.ClusterSpec) { s.InsecureSkipTLSVerification = true }),
		cluster("insecure-with-ca", func(s *clusterv1alpha1.ClusterSpec) {
			s.InsecureSkipTLSVerification = true
			s.SecretRef = &clusterv1alpha1.LocalSecretReference{Namespace: names.SystemNamespace, Name: "ca"}
		}),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: names.SystemNamespace, Name: "ca"},
			Data: map[string][]byte{clusterv1alpha1.SecretCADataKey: []byte("the member's CA")}},
		cluster("ftp", func(s *clusterv1alpha1.ClusterSpec) { s.ProxyURL = "ftp://user:pw@egress.example" }),
		cluster("badheader", func(s *clusterv1alpha1.ClusterSpec) {
			s.ProxyURL, s.ProxyHeader = "http://egress.example:3128", map[string]string{"X-Token": "s3cret\r\nX-Other: 1"}
		}))
	pub := &docPublisher{}
	rec := record.NewFakeRecorder(100)
	r := &Reconciler{Client: c, Publisher: pub, Recorder: rec}
	r.setDefaults()
	ctx := context.Background()
	for range 2 {
		for _, sc := range []*meshv1alpha1.ShardingConfig{fed, tenant} {
			if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(sc)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	members := func(sc *meshv1alpha1.ShardingConfig) []config.Cluster {
		t.Helper()
		d, ok := pub.get(xds.OwnershipType, xds.ResourceName(client.ObjectKeyFromObject(sc), 0))
		if !ok {
			t.Fatalf("no ownership document published for %s", sc.Namespace)
		}
		own, err := config.DecodeOwnership(d.Data)
		if err != nil {
			t.Fatalf("the proxies refuse the ownership document: %v", err)
		}
		if strings.Contains(string(d.Data), "egress") != (sc == fed) {
			t.Errorf("%s's proxies get %s", sc.Namespace, d.Data)
		}
		return own.Clusters
	}
	want := []config.Cluster{
		{Name: "direct", Server: "https://10.0.0.1:6443"},
		// The proxies verify with the CA, as always: insecureSkipTLSVerification is not needed, and harmless.
		{Name: "insecure-with-ca", Server: "https://10.0.0.1:6443", CAData: []byte("the member's CA")},
		{Name: "proxied", Server: "https://10.0.0.1:6443", ProxyURL: "http://egress.example:3128", ProxyHeader: map[string]string{"X-Proxy-Token": "s3cret"}},
	}
	if got := members(fed); !reflect.DeepEqual(got, want) {
		t.Errorf("published members %+v, want %+v", got, want)
	}
	// A tenant could read its proxy's configuration, and the egress proxy's credentials with it.
	want[2].ProxyURL, want[2].ProxyHeader = "", nil
	if got := members(tenant); !reflect.DeepEqual(got, want) {
		t.Errorf("published members of a tenant's ShardingConfig %+v, want %+v", got, want)
	}
	told := map[string]int{}
	for _, e := range events(rec) {
		if strings.Contains(e, "s3cret") || strings.Contains(e, ":pw@") {
			t.Errorf("event %q shows a secret", e)
		}
		for _, reason := range []string{ReasonInsecureNotProxied, ReasonInvalidProxy, ReasonInvalidAPIEndpoint} {
			if strings.Contains(e, reason) {
				told[reason]++
			}
		}
	}
	if wantTold := map[string]int{ReasonInsecureNotProxied: 1, ReasonInvalidProxy: 2}; !reflect.DeepEqual(told, wantTold) {
		t.Errorf("events told %v, want %v (once each)", told, wantTold)
	}
}

// A changed proxy header is a new member configuration for the proxies: a new version, so it reaches them.
func TestClustersVersionFollowsTheProxy(t *testing.T) {
	base := config.Cluster{Name: "m", Server: "https://10.0.0.1:6443", ProxyURL: "http://egress:3128", ProxyHeader: map[string]string{"X-A": "1"}}
	other := base
	other.ProxyHeader = map[string]string{"X-A": "2"}
	noProxy := base
	noProxy.ProxyURL, noProxy.ProxyHeader = "", nil
	v := clustersVersion([]config.Cluster{base})
	for name, c := range map[string]config.Cluster{"another header value": other, "no proxy": noProxy} {
		if clustersVersion([]config.Cluster{c}) == v {
			t.Errorf("%s: the version did not change", name)
		}
	}
	// The version a tenant's ShardingConfig shows (status.proxies[].ackedVersion) tells nothing of the headers.
	if a, b := clustersVersion(withoutEgress([]config.Cluster{base})), clustersVersion(withoutEgress([]config.Cluster{other})); a != b {
		t.Errorf("without egress, versions %s and %s differ with the header value", a, b)
	}
}
