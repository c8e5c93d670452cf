package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/manager/sharding"
	"github.com/fedmesh/fedmesh/test/cluster"
)

// A shard that owns namespaces but has no pod is reported, in the Ready condition and a Warning Event, with what
// to do about it; its pod arriving makes the ShardingConfig Ready.
func TestManagerReportsAShardWithoutPods(t *testing.T) {
	t.Parallel()
	c := cluster.New(t, cluster.Options{})
	ctx := context.Background()
	teamNamespaces(t, c.Clientset(), 6)
	m := startMesh(t, c)
	m.addShardPod(0)
	m.createShardingConfig(meshv1alpha1.ShardingConfigSpec{Shards: 2})
	var ready *metav1.Condition
	eventually(t, 30*time.Second, "Ready False for the shard without pods", func() (bool, error) {
		ready = meta.FindStatusCondition(m.shardingConfig().Status.Conditions, "Ready")
		return ready != nil && ready.Status == metav1.ConditionFalse && ready.Reason == sharding.ReasonShardUnserved, nil
	})
	if !strings.Contains(ready.Message, "shard(s) 1 have no live pod") || !strings.Contains(ready.Message, "spec.selector") {
		t.Errorf("Ready message %q does not say which shard has no pod and what to do", ready.Message)
	}
	eventually(t, 30*time.Second, "a ShardUnserved Warning Event", func() (bool, error) {
		events, err := c.Clientset().EventsV1().Events(meshNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.Reason == sharding.ReasonShardUnserved && e.Type == "Warning" && e.Regarding.Name == "op" && e.Note == ready.Message {
				return true, nil
			}
		}
		return false, nil
	})
	m.addShardPod(1)
	m.waitReady(2)
}
