package scenarios

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/client-go/kubernetes"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/pkg/shard"
	"github.com/fedmesh/fedmesh/test/bench/suite"
	"github.com/fedmesh/fedmesh/test/cluster"
)

// ShardScaling syncs one informer per shard, all at once, behind N proxies that split the namespaces evenly.
func ShardScaling() suite.Scenario {
	return suite.Scenario{
		Name: "shard-scaling",
		Description: "Pods over many namespaces; N proxies split the namespaces evenly (shard.SplitByNamespaces) and " +
			"one pod informer per shard syncs through its proxy, all shards at once, for each filter mode: the API " +
			"server filters (server), a label selector on the hash-bucket label (label), the proxy filters (client).",
		Run: runShardScaling,
	}
}

var (
	mShardSync    = suite.Metric{Name: "shard-sync-mean", Unit: "s", Bound: "API server CPU; shards share 2 cores"}
	mShardSyncMax = suite.Metric{Name: "shard-sync-max", Unit: "s", Bound: "API server CPU; shards share 2 cores"}
	mShardRSS     = suite.Metric{Name: "proxy-rss-mean", Unit: "MiB", Bound: "proxy memory"}
	mShardObjects = suite.Metric{Name: "objects-per-shard-max", Unit: "pods", Bound: "namespace split"}
	mShardSkew    = suite.Metric{Name: "object-skew", Unit: "max/mean", Bound: "namespace split"}
)

func runShardScaling(ctx context.Context, env *suite.Env, res *suite.Result) error {
	nsCount, perNS := env.Scale.Pick(8, 100, 1000), env.Scale.Pick(20, 50, 100)
	counts := []int{1, 2, 4, 8}[:env.Scale.Pick(2, 3, 4)]
	modes := []meshv1alpha1.FilterMode{meshv1alpha1.FilterModeServer, meshv1alpha1.FilterModeLabel, meshv1alpha1.FilterModeClient}
	res.Param("pods", nsCount*perNS)
	res.Param("namespaces", nsCount)
	res.Param("shards", counts)
	c, err := benchCluster(ctx, "bench-shards")
	if err != nil {
		return err
	}
	defer c.Stop()
	admin := kubernetes.NewForConfigOrDie(unlimited(c.Config()))
	namespaces := podNamespaces(nsCount)
	if err := createPods(ctx, admin, namespaces, perNS); err != nil {
		return fmt.Errorf("create pods: %w", err)
	}
	var variants []suite.Variant
	for _, mode := range modes {
		for _, n := range counts {
			variants = append(variants, suite.Variant{Name: shardVariant(mode, n), Run: func(ctx context.Context, _ int) (map[string]float64, error) {
				return shardRun(ctx, env.BinDir, c, namespaces, mode, n, nsCount*perNS)
			}})
		}
	}
	s, err := suite.Interleave(ctx, env, env.Reps, variants...)
	if err != nil {
		return err
	}
	res.Record(s, mShardSync, mShardSyncMax, mShardRSS, mShardObjects, mShardSkew)
	for _, mode := range modes {
		var xs []float64
		var syncs, rss [][]float64
		for _, n := range counts {
			xs = append(xs, float64(n))
			syncs = append(syncs, s[shardVariant(mode, n)][mShardSync.Name])
			rss = append(rss, s[shardVariant(mode, n)][mShardRSS.Name])
			if n > 1 {
				bar := ""
				if mode == meshv1alpha1.FilterModeServer {
					bar = fmt.Sprintf("<= %.3g", 1.2/float64(n))
				}
				res.Compare(s, mShardSync.Name, "ratio", shardVariant(mode, n), shardVariant(mode, 1), bar)
				res.Compare(s, mShardRSS.Name, "ratio", shardVariant(mode, n), shardVariant(mode, 1), bar)
			}
		}
		res.AddSeries("sync", string(mode), "shards", "per-shard sync time (s, mean over shards)", xs, syncs)
		res.AddSeries("rss", string(mode), "shards", "proxy RSS per shard (MiB)", xs, rss)
	}
	res.Note("All shards' informers run in the benchmark process and all proxies and the API server share the " +
		"machine's 2 cores, so N shards syncing at once compete for the same CPU: per-shard sync time cannot fall " +
		"as 1/N here the way it would with a core per shard.")
	return nil
}

func shardVariant(mode meshv1alpha1.FilterMode, n int) string { return fmt.Sprintf("%s/N=%d", mode, n) }

// shardRun starts n proxies, syncs an informer through each at once, and stops them.
func shardRun(ctx context.Context, binDir string, c *cluster.Cluster, namespaces []string, mode meshv1alpha1.FilterMode, n, total int) (map[string]float64, error) {
	ids := make([]shard.ShardID, n)
	for i := range ids {
		ids[i] = shard.ShardID(i)
	}
	assignment := shard.SplitByNamespaces(namespaces, ids)
	proxies := make([]*proxy, n)
	defer func() {
		for _, p := range proxies {
			if p != nil {
				p.stop()
			}
		}
	}()
	for i := range n {
		p, err := startProxy(ctx, binDir, c, config.Ownership{Shard: ids[i], Assignment: assignment, FilterMode: mode})
		if err != nil {
			return nil, err
		}
		proxies[i] = p
	}
	results := make([]syncResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, p := range proxies {
		wg.Go(func() { results[i], errs[i] = syncPodInformer(ctx, unlimited(p.config(c.Config()))) })
	}
	wg.Wait()
	var sum, maxSync, rss, objects, maxObjects float64
	for i, r := range results {
		if errs[i] != nil {
			return nil, fmt.Errorf("shard %d: %w", i, errs[i])
		}
		u, err := proxies[i].usage()
		if err != nil {
			return nil, err
		}
		sum += r.seconds
		maxSync = max(maxSync, r.seconds)
		rss += suite.MiB(u.RSSBytes)
		objects += float64(r.objects)
		maxObjects = max(maxObjects, float64(r.objects))
	}
	if int(objects) != total {
		return nil, fmt.Errorf("the shards saw %d pods together, want %d", int(objects), total)
	}
	return map[string]float64{
		mShardSync.Name: sum / float64(n), mShardSyncMax.Name: maxSync, mShardRSS.Name: rss / float64(n),
		mShardObjects.Name: maxObjects, mShardSkew.Name: maxObjects / (objects / float64(n)),
	}, nil
}
