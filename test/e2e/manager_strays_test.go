package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/test/cluster"
)

// A pod deleted with --force leaves its proxy running: the status lists that proxy as a stray, and a handover
// held up by it says so, until the stray's lease has run out.
func TestManagerStatusNamesTheStraysAHandoverWaitsFor(t *testing.T) {
	t.Parallel()
	c := cluster.New(t, cluster.Options{})
	teamNamespaces(t, c.Clientset(), 10)
	m := startMeshWith(t, c, []string{"--proxy-lease", "5s", "--proxy-lease-margin", "2s"}, []string{"--ownership-lease", "5s"})
	m.addShardPod(0)
	m.addShardPod(1)
	m.createShardingConfig(meshv1alpha1.ShardingConfigSpec{Shards: 2})
	m.waitReady(2)

	stray := func(sc *meshv1alpha1.ShardingConfig) (meshv1alpha1.ProxyStatus, bool) {
		i := slices.IndexFunc(sc.Status.Proxies, func(p meshv1alpha1.ProxyStatus) bool { return p.Stray })
		if i < 0 {
			return meshv1alpha1.ProxyStatus{}, false
		}
		return sc.Status.Proxies[i], true
	}
	m.removeShardPod(1) // the pod is gone from the API; its proxy still runs, connected
	eventually(t, 30*time.Second, "the proxy of the deleted pod listed as a stray", func() (bool, error) {
		sc := m.shardingConfig()
		p, ok := stray(sc)
		return ok && p.Pod == "op-1" && p.Shard == 1 && p.PodUID != "", fmt.Errorf("proxies %+v", sc.Status.Proxies)
	})

	m.relays[1].partition() // the stray cannot acknowledge the revoke of its ranges
	patchShards(t, m, 1)
	eventually(t, 30*time.Second, "a handover naming the stray it waits for", func() (bool, error) {
		sc := m.shardingConfig()
		// Ready tells first that shard 1 has no pod; Progressing tells the handover.
		progressing := meta.FindStatusCondition(sc.Status.Conditions, "Progressing")
		return progressing != nil && progressing.Reason == "HandingOver" && strings.Contains(progressing.Message, "1 stray"),
			fmt.Errorf("Progressing %+v", progressing)
	})
	sc := m.waitReady(1) // once the stray's lease (and margin) ran out
	if p, ok := stray(sc); ok {
		t.Errorf("a stray counted out is still listed: %+v", p)
	}
}
