package proxy

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A client watches an object it just created, from the create's resourceVersion (watchtools.Until, RetryWatcher,
// a kubectl-like wait). No ownership change at all: the proxy was started and has owned "a" since.
func TestWatchFromACreatesResourceVersionAtAPlainStart(t *testing.T) {
	_, via, _ := proxiedCluster(t, []string{"a"}, shardOneOwning(1, rangesOf("a"), ""))
	ctx := context.Background()
	cm, err := via.CoreV1().ConfigMaps("a").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := via.CoreV1().ConfigMaps("a").Watch(ctx, metav1.ListOptions{ResourceVersion: cm.ResourceVersion, FieldSelector: "metadata.name=x"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		t.Errorf("watch from the create's resourceVersion: got %s %v", ev.Type, ev.Object)
	case <-time.After(2 * time.Second):
		t.Log("watch open, no event: as the API server answers")
	}
	w.Stop()
	// A write in the owned namespace, no grant since start.
	if _, err := via.CoreV1().ConfigMaps("a").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "y-"}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("a write in the owned namespace, with no grant since the start, was refused: %v", err)
	}
}
