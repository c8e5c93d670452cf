package cli

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedmesh/fedmesh/test/cluster"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// TestManagerCacheHoldsNoManagedFields: a controller's cache holds objects without the managed fields the API
// server keeps on them, and an update of a cached copy leaves those fields as they are on the server.
func TestManagerCacheHoldsNoManagedFields(t *testing.T) {
	c := cluster.New(t, cluster.Options{})
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	f := ManagerFlags{Kubeconfig: c.Kubeconfig(), MetricsAddress: "0", HealthProbeAddress: "0", QPS: 50, Burst: 100}
	mgr, err := f.NewManager(scheme, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = mgr.Start(ctx) }()

	live := c.Clientset().CoreV1().ConfigMaps("default")
	created, err := live.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "managed"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(created.ManagedFields) == 0 {
		t.Fatal("the API server kept no managed fields: nothing to strip")
	}
	var cached corev1.ConfigMap
	fedtest.Eventually(t, 30*time.Second, "the ConfigMap in the manager's cache", func() error {
		return mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(created), &cached)
	})
	if len(cached.ManagedFields) != 0 {
		t.Errorf("cached copy has managed fields %v", cached.ManagedFields)
	}
	cached.Data["k"] = "w"
	if err := mgr.GetClient().Update(ctx, &cached); err != nil {
		t.Fatal(err)
	}
	after, err := live.Get(ctx, "managed", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.Data["k"] != "w" || len(after.ManagedFields) == 0 {
		t.Errorf("after the update: data %v, managed fields %v; want w and the server's fields kept", after.Data, after.ManagedFields)
	}
}
