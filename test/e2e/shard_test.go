package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fedmesh/fedmesh/pkg/shard"
	"github.com/fedmesh/fedmesh/test/cluster"
)

// The API server, asked with pkg/shard's selectors, partitions namespaces exactly as pkg/shard does: every
// namespace is seen by exactly the shard that owns it, including a namespace carved out for a canary.
func TestShardSelectorsPartitionARealAPIServer(t *testing.T) {
	c := cluster.New(t, cluster.Options{})
	cs := c.Clientset()
	ctx := context.Background()
	var namespaces []string
	for i := range 40 {
		ns := fmt.Sprintf("team-%d", i)
		namespaces = append(namespaces, ns)
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	assignment := shard.SplitByNamespaces(namespaces, []shard.ShardID{0, 1, 2})
	assignment = shard.Carve(assignment, "team-7", 9)
	if err := assignment.Validate(); err != nil {
		t.Fatal(err)
	}
	seenBy := map[string][]shard.ShardID{}
	for _, id := range assignment.Shards() {
		selector, err := shard.ShardSelector(assignment[id])
		if err != nil {
			t.Fatal(err)
		}
		raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/configmaps").Param("shardSelector", selector).DoRaw(ctx)
		if err != nil {
			t.Fatalf("shard %d: %v", id, err)
		}
		var list struct {
			Metadata struct {
				ShardInfo struct {
					Selector string `json:"selector"`
				} `json:"shardInfo"`
			} `json:"metadata"`
			Items []corev1.ConfigMap `json:"items"`
		}
		if err := json.Unmarshal(raw, &list); err != nil {
			t.Fatal(err)
		}
		if list.Metadata.ShardInfo.Selector != selector {
			t.Errorf("shard %d: server echoed %q, want %q", id, list.Metadata.ShardInfo.Selector, selector)
		}
		for _, cm := range list.Items {
			seenBy[cm.Namespace] = append(seenBy[cm.Namespace], id)
		}
	}
	for _, ns := range namespaces {
		owner, _ := assignment.NamespaceOwner(ns)
		if got := seenBy[ns]; len(got) != 1 || got[0] != owner {
			t.Errorf("namespace %s seen by shards %v, want only its owner %d", ns, got, owner)
		}
	}
	perShard := map[shard.ShardID]int{}
	for _, ns := range namespaces {
		owner, _ := assignment.NamespaceOwner(ns)
		perShard[owner]++
	}
	if perShard[0] < 10 || perShard[1] < 10 || perShard[2] < 10 {
		t.Errorf("namespaces per shard %v: the split should balance 40 namespaces over 3 shards", perShard)
	}
	if got := seenBy["team-7"]; len(got) != 1 || got[0] != 9 {
		t.Errorf("carved namespace team-7 seen by %v, want only the canary shard 9", got)
	}
}
