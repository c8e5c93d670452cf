package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/pkg/shard"
	"github.com/fedmesh/fedmesh/test/bench/podsync"
	"github.com/fedmesh/fedmesh/test/bench/suite"
	"github.com/fedmesh/fedmesh/test/cluster"
)

// ShardScaling syncs one replica's informer per shard, all at once and each alone, behind N proxies that split the
// namespaces evenly.
func ShardScaling() suite.Scenario {
	return suite.Scenario{
		Name: "shard-scaling",
		Description: "Pods over many namespaces; N proxies split the namespaces evenly (shard.SplitByNamespaces) and " +
			"one shard replica (a pod informer in a process of its own) per shard syncs through its proxy, all shards at " +
			"once and then each alone, for each filter mode: the API " +
			"server filters (server), a label selector on the hash-bucket label (label), the proxy filters (client).",
		Run: runShardScaling,
	}
}

var (
	mShardSync         = suite.Metric{Name: "shard-sync-mean", Unit: "s", Bound: "API server CPU; shards share 2 cores"}
	mShardSyncMax      = suite.Metric{Name: "shard-sync-max", Unit: "s", Bound: "API server CPU; shards share 2 cores"}
	mShardSyncAlone    = suite.Metric{Name: "shard-sync-alone-mean", Unit: "s", Bound: "API server CPU (LIST of the shard's pods)"}
	mShardSyncAloneMax = suite.Metric{Name: "shard-sync-alone-max", Unit: "s", Bound: "API server CPU (LIST of the shard's pods)"}
	mShardRSS          = suite.Metric{Name: "shard-rss-mean", Unit: "MiB", Bound: "the shard's pods in its informer's store"}
	mProxyRSSMean      = suite.Metric{Name: "proxy-rss-mean", Unit: "MiB", Bound: "proxy memory (streams, holds no objects)"}
	mShardObjects      = suite.Metric{Name: "objects-per-shard-max", Unit: "pods", Bound: "namespace split"}
	mShardSkew         = suite.Metric{Name: "object-skew", Unit: "max/mean", Bound: "namespace split"}
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
	res.Record(s, mShardSync, mShardSyncMax, mShardSyncAlone, mShardSyncAloneMax, mShardRSS, mProxyRSSMean, mShardObjects, mShardSkew)
	for _, mode := range modes {
		var xs []float64
		var syncs, alone, rss [][]float64
		for _, n := range counts {
			v := shardVariant(mode, n)
			xs = append(xs, float64(n))
			syncs = append(syncs, s[v][mShardSync.Name])
			alone = append(alone, s[v][mShardSyncAlone.Name])
			rss = append(rss, s[v][mShardRSS.Name])
			if n == 1 {
				continue
			}
			bar := ""
			if mode == meshv1alpha1.FilterModeServer {
				bar = fmt.Sprintf("<= %.3g", 1.2/float64(n))
			}
			for _, m := range []suite.Metric{mShardSync, mShardSyncAlone, mShardRSS} {
				res.Compare(s, m.Name, "ratio", v, shardVariant(mode, 1), bar)
			}
			res.Compare(s, mProxyRSSMean.Name, "ratio", v, shardVariant(mode, 1), "")
		}
		res.AddSeries("sync", string(mode), "shards", "per-shard sync time, all shards at once (s, mean)", xs, syncs)
		res.AddSeries("sync-alone", string(mode), "shards", "per-shard sync time, each shard alone (s, mean)", xs, alone)
		res.AddSeries("rss", string(mode), "shards", "shard replica RSS once synced (MiB, mean)", xs, rss)
	}
	res.Note("Each shard replica is a process of its own (test/bench/replica: a pod informer through its shard's " +
		"proxy); its RSS is read once its informer has synced, while it holds its store. The proxies hold no objects: " +
		"their RSS does not depend on the shard's size (proxy-rss-mean). Each proxy runs with GOMAXPROCS=1, as the " +
		"injected proxy does at its default CPU request.")
	res.Note("All at once, N replicas, N proxies and the API server share the machine's 2 cores, and the API server " +
		"encodes every pod once whatever N is, so per-shard sync time cannot fall as 1/N here the way it would with " +
		"the API server's cores to spare. Alone, one replica syncs while the others do not, as when one replica " +
		"restarts: it receives only its shard's pods, but the API server still checks every pod against the " +
		"shard's selector (its watch cache has no index by namespace hash or shard label), and a replica's runtime " +
		"has a fixed cost (about 20 MiB of RSS), so neither its sync time nor its RSS reaches 1/N exactly.")
	return nil
}

func shardVariant(mode meshv1alpha1.FilterMode, n int) string { return fmt.Sprintf("%s/N=%d", mode, n) }

// shardRun starts n proxies, syncs a replica's informer through each, all at once and then each alone, and stops
// them.
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
	token := c.Config().BearerToken
	together := make([]replicaResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, p := range proxies {
		wg.Go(func() { together[i], errs[i] = syncReplica(ctx, binDir, "http://"+p.addr, token) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	alone := make([]replicaResult, n)
	for i, p := range proxies {
		var err error
		if alone[i], err = syncReplica(ctx, binDir, "http://"+p.addr, token); err != nil {
			return nil, err
		}
	}
	var sum, maxSync, sumAlone, maxAlone, rss, proxyRSS, objects, maxObjects float64
	for i, r := range together {
		u, err := proxies[i].usage()
		if err != nil {
			return nil, err
		}
		sum += r.Seconds
		maxSync = max(maxSync, r.Seconds)
		sumAlone += alone[i].Seconds
		maxAlone = max(maxAlone, alone[i].Seconds)
		rss += suite.MiB(r.rssBytes)
		proxyRSS += suite.MiB(u.RSSBytes)
		objects += float64(r.Objects)
		maxObjects = max(maxObjects, float64(r.Objects))
		if alone[i].Objects != r.Objects {
			return nil, fmt.Errorf("shard %d saw %d pods alone, %d with the others", i, alone[i].Objects, r.Objects)
		}
	}
	if int(objects) != total {
		return nil, fmt.Errorf("the shards saw %d pods together, want %d", int(objects), total)
	}
	return map[string]float64{
		mShardSync.Name: sum / float64(n), mShardSyncMax.Name: maxSync,
		mShardSyncAlone.Name: sumAlone / float64(n), mShardSyncAloneMax.Name: maxAlone,
		mShardRSS.Name: rss / float64(n), mProxyRSSMean.Name: proxyRSS / float64(n),
		mShardObjects.Name: maxObjects, mShardSkew.Name: maxObjects / (objects / float64(n)),
	}, nil
}

// replicaResult is what one shard replica's informer sync cost, and its process's RSS once synced.
type replicaResult struct {
	podsync.Result
	rssBytes float64
}

// syncReplica runs the replica command (a shard replica's pod informer in a process of its own) against server
// until its informer has synced, reads its RSS while it holds its store, and stops it.
func syncReplica(ctx context.Context, binDir, server, token string) (replicaResult, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "replica"), "--server", server)
	cmd.Env = append(os.Environ(), "FEDMESH_BENCH_TOKEN="+token)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return replicaResult{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return replicaResult{}, err
	}
	if err := cmd.Start(); err != nil {
		return replicaResult{}, err
	}
	var out replicaResult
	decodeErr := json.NewDecoder(stdout).Decode(&out.Result)
	if decodeErr == nil {
		u, err := suite.ReadUsage(cmd.Process.Pid)
		decodeErr = err
		out.rssBytes = u.RSSBytes
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil || decodeErr != nil {
		return replicaResult{}, fmt.Errorf("replica through %s: %w: %s", server, errors.Join(decodeErr, err), stderr.String())
	}
	return out, nil
}
