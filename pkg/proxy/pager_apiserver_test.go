package proxy

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fedmesh/fedmesh/pkg/proxy/config"
)

// An uncached, paginated List (client-go pager, controller-runtime's APIReader) whose next page falls after a
// grant; no informer watches anything.
func TestListOnlyClientAcrossAGrantHoldsNoFence(t *testing.T) {
	admin, via, store := proxiedCluster(t, []string{"a", "b"}, shardOneOwning(1, rangesOf("a"), ""))
	ctx := context.Background()
	for _, n := range []string{"x1", "x2"} {
		if _, err := admin.CoreV1().ConfigMaps("a").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	page, err := via.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil || page.Continue == "" {
		t.Fatal(err, page.Continue)
	}
	if err := store.Apply(config.KindOwnership, "2", []byte(shardOneOwning(2, rangesOf("a", "b"), ""))); err != nil {
		t.Fatal(err)
	}
	_, err = via.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{Limit: 1, Continue: page.Continue})
	t.Logf("next page after the grant: %v", err)
	if _, err := via.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{}); err != nil { // the pager's full list
		t.Fatal(err)
	}
	// Writable as soon as the change is taken in: nothing waits for a client that only lists (the bound is minutes).
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err = via.CoreV1().ConfigMaps("b").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "y-"}}, metav1.CreateOptions{})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the granted namespace is still unwritable 10s after the only client listed afresh: %v", err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
