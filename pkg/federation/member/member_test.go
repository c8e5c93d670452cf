package member

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/fedmesh/fedmesh/pkg/apis"
	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// countingReader counts the Secret reads.
type countingReader struct {
	client.Reader
	secrets int
}

func (r *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.Secret); ok {
		r.secrets++
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}

// A client is handed out again without reading the Secret each time, also when only the Cluster's status
// changed (it does with every probe); a changed spec is read afresh.
func TestFactoryReusesClientsWithoutRereadingTheSecret(t *testing.T) {
	c, fc := member1(t)
	secrets := &countingReader{Reader: fc}
	f := &Factory{Host: fc, Secrets: secrets}
	ctx := context.Background()
	first, err := f.Client(ctx, "member1")
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		again, err := f.Client(ctx, "member1")
		if err != nil || again != first {
			t.Fatalf("a new client (%v) for an unchanged Cluster", err)
		}
	}
	if secrets.secrets != 1 {
		t.Errorf("the Secret was read %d times for 6 clients of an unchanged Cluster; want 1", secrets.secrets)
	}
	if err := fc.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
		t.Fatal(err)
	}
	c.Status.KubernetesVersion = "v1.36.3"
	if err := fc.Status().Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	if again, err := f.Client(ctx, "member1"); err != nil || again != first || secrets.secrets != 1 {
		t.Errorf("after a status change: same client %t (%v), secret reads %d; want the same client, 1 read", again == first, err, secrets.secrets)
	}
	// A taint, as the cluster controller puts on a member that is not ready, changes nothing a client is made of.
	c.Spec.Taints = []corev1.Taint{{Key: "cluster.fedmesh.io/not-ready", Effect: corev1.TaintEffectNoSchedule}}
	c.Generation++ // the API server counts generations; the fake client does not
	if err := fc.Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	if again, err := f.Client(ctx, "member1"); err != nil || again != first || secrets.secrets != 1 {
		t.Errorf("after a taint: same client %t (%v), secret reads %d; want the same client, 1 read", again == first, err, secrets.secrets)
	}
	c.Spec.APIEndpoint = "https://127.0.0.1:7443"
	c.Generation++
	if err := fc.Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	changed, err := f.Client(ctx, "member1")
	if err != nil {
		t.Fatal(err)
	}
	if changed == first || changed.Config.Host != "https://127.0.0.1:7443" || secrets.secrets != 2 {
		t.Errorf("after the Cluster changed: same client %t, host %s, secret reads %d", changed == first, changed.Config.Host, secrets.secrets)
	}
}

// forgettingReader forgets the cluster's client, as its Cluster's deletion does, while a client is being made.
type forgettingReader struct {
	client.Reader
	f    *Factory
	name string
}

func (r *forgettingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.f.Forget(r.name)
	return r.Reader.Get(ctx, key, obj, opts...)
}

// A client being made when its Cluster is deleted (and its client forgotten) is handed out but not kept: kept,
// it would stay for the life of the process, as nothing forgets it again.
func TestFactoryKeepsNoClientForgottenWhileMade(t *testing.T) {
	_, fc := member1(t)
	f := &Factory{Host: fc}
	f.Secrets = &forgettingReader{Reader: fc, f: f, name: "member1"}
	if mc, err := f.Client(context.Background(), "member1"); err != nil || mc == nil {
		t.Fatalf("client %v, %v", mc, err)
	}
	if _, kept := f.clients["member1"]; kept {
		t.Error("the client of a Cluster forgotten while it was made is kept")
	}
	f.Secrets = fc
	if _, err := f.Client(context.Background(), "member1"); err != nil {
		t.Fatal(err)
	}
	if _, kept := f.clients["member1"]; !kept {
		t.Error("a client made undisturbed is not kept")
	}
}

// member1 is Cluster member1 with its credentials Secret, in a fake host.
func member1(t *testing.T) (*clusterv1alpha1.Cluster, client.WithWatch) {
	t.Helper()
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = apis.AddToScheme(s)
	c := &clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "member1"},
		Spec: clusterv1alpha1.ClusterSpec{APIEndpoint: "https://127.0.0.1:6443",
			SecretRef: &clusterv1alpha1.LocalSecretReference{Namespace: "fedmesh-system", Name: "member1"}},
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "fedmesh-system", Name: "member1"},
		Data: map[string][]byte{clusterv1alpha1.SecretTokenKey: []byte("t")}}
	return c, fake.NewClientBuilder().WithScheme(s).WithObjects(c, secret).WithStatusSubresource(c).Build()
}
