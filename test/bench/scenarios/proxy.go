package scenarios

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/pkg/shard"
	"github.com/fedmesh/fedmesh/test/bench/podsync"
	"github.com/fedmesh/fedmesh/test/bench/suite"
)

// The metrics of proxy-overhead.
var (
	mSync      = suite.Metric{Name: "informer-sync", Unit: "s", Bound: "API server CPU (LIST encoding), shared 2 cores"}
	mSyncBytes = suite.Metric{Name: "informer-sync-bytes", Unit: "MiB", Bound: "object count (JSON)"}
	mHeap      = suite.Metric{Name: "client-store-heap", Unit: "MiB", Bound: "object count"}
	mGetP50    = suite.Metric{Name: "get-p50", Unit: "ms", Bound: "API server round trip, loopback"}
	mGetP99    = suite.Metric{Name: "get-p99", Unit: "ms", Bound: "scheduling noise on 2 shared cores"}
	mBurst     = suite.Metric{Name: "watch-burst-last-event", Unit: "s", Bound: "watch cache replay + event decoding, CPU"}
	mProxyCPU  = suite.Metric{Name: "proxy-cpu-per-1k-events", Unit: "CPU-s", Bound: "proxy CPU"}
	mProxyRSS  = suite.Metric{Name: "proxy-rss", Unit: "MiB", Bound: "proxy memory"}
)

// ProxyOverhead compares a client going straight to the API server with one going through the proxy, in server
// and client filter mode.
func ProxyOverhead() suite.Scenario {
	return suite.Scenario{
		Name: "proxy-overhead",
		Description: "Pods in one API server; an informer, GETs and a watch burst, straight to the API server " +
			"(direct) and through the proxy owning every benchmark namespace, with the API server filtering " +
			"(proxy-server) and with the proxy filtering every item and event itself (proxy-client); and through a " +
			"bare hop (bare-hop): the proxy's forwarding alone, in a process of its own, for what any sidecar costs; " +
			"and a proxy owning one namespace (proxy-server-one-namespace) serving the same informer, GETs and watch " +
			"burst within it, for whether the proxy's memory follows the objects it passes.",
		Run: runProxyOverhead,
	}
}

func runProxyOverhead(ctx context.Context, env *suite.Env, res *suite.Result) error {
	nsCount, perNS := env.Scale.Pick(10, 50, 1000), env.Scale.Pick(30, 100, 100)
	gets, burst := env.Scale.Pick(200, 2000, 10000), env.Scale.Pick(200, 2000, 20000)
	res.Param("pods", nsCount*perNS)
	res.Param("namespaces", nsCount)
	res.Param("gets", gets)
	res.Param("burstEvents", burst)
	c, err := benchCluster(ctx, "bench-proxy")
	if err != nil {
		return err
	}
	defer c.Stop()
	admin := kubernetes.NewForConfigOrDie(unlimited(c.Config()))
	namespaces := podNamespaces(nsCount)
	start := time.Now()
	if err := createPods(ctx, admin, namespaces, perNS); err != nil {
		return fmt.Errorf("create pods: %w", err)
	}
	res.Note("Created %d pods in %.1f s (%.0f/s) with 32 parallel writers.", nsCount*perNS, time.Since(start).Seconds(),
		float64(nsCount*perNS)/time.Since(start).Seconds())

	// The proxy owns one range holding every benchmark namespace but not the whole space, so it really filters.
	lo, hi := shard.NamespaceHash(namespaces[0]), shard.NamespaceHash(namespaces[0])
	for _, ns := range namespaces {
		lo, hi = min(lo, shard.NamespaceHash(ns)), max(hi, shard.NamespaceHash(ns))
	}
	owned := shard.NewSet(shard.Range{First: lo, Last: hi})
	assignment := shard.Assignment{0: owned, 1: owned.Complement()}

	variants := []suite.Variant{{Name: "direct", Run: overheadRun(admin, c.Config(), nil, namespaces, perNS, gets, burst)}}
	hop, err := startBareHop(ctx, env.BinDir, c)
	if err != nil {
		return err
	}
	defer hop.stop()
	variants = append(variants, suite.Variant{Name: "bare-hop", Run: overheadRun(admin, hop.config(c.Config()), hop, namespaces, perNS, gets, burst)})
	for _, mode := range []meshv1alpha1.FilterMode{meshv1alpha1.FilterModeServer, meshv1alpha1.FilterModeClient} {
		p, err := startProxy(ctx, env.BinDir, c, config.Ownership{Shard: 0, Assignment: assignment, FilterMode: mode})
		if err != nil {
			return err
		}
		defer p.stop()
		variants = append(variants, suite.Variant{Name: "proxy-" + string(mode),
			Run: overheadRun(admin, p.config(c.Config()), p, namespaces, perNS, gets, burst)})
	}
	// A proxy owning one benchmark namespace takes the same requests, its GETs and burst within that namespace:
	// against the proxy that passes every pod, its memory says whether the proxy's follows the objects it passes.
	one := shard.NewSet(shard.Range{First: shard.NamespaceHash(namespaces[0]), Last: shard.NamespaceHash(namespaces[0])})
	pOne, err := startProxy(ctx, env.BinDir, c, config.Ownership{Shard: 0, Assignment: shard.Assignment{0: one, 1: one.Complement()},
		FilterMode: meshv1alpha1.FilterModeServer})
	if err != nil {
		return err
	}
	defer pOne.stop()
	variants = append(variants, suite.Variant{Name: "proxy-server-one-namespace", Run: overheadRun(admin, pOne.config(c.Config()), pOne, namespaces[:1], perNS, gets, burst)})
	s, err := suite.Interleave(ctx, env, env.Reps, variants...)
	if err != nil {
		return err
	}
	res.Record(s, mSync, mSyncBytes, mHeap, mGetP50, mGetP99, mBurst, mProxyCPU, mProxyRSS)
	res.Compare(s, mProxyRSS.Name, "ratio", "proxy-server", "proxy-server-one-namespace", "<= 1.05")
	for _, v := range []string{"proxy-server", "proxy-client"} {
		res.Compare(s, mSync.Name, "ratio", v, "direct", "<= 1.05")
		res.Compare(s, mSyncBytes.Name, "ratio", v, "direct", "<= 1.05")
		res.Compare(s, mGetP50.Name, "ratio", v, "direct", "<= 1.05")
		res.Compare(s, mGetP99.Name, "difference", v, "direct", "<= 1")
		res.Compare(s, mBurst.Name, "ratio", v, "direct", "<= 1.05")
	}
	// What fedmesh costs beyond forwarding, and what forwarding costs at all.
	for _, m := range []string{mSync.Name, mGetP50.Name, mBurst.Name} {
		res.Compare(s, m, "ratio", "proxy-server", "bare-hop", "<= 1.05")
		res.Compare(s, m, "ratio", "bare-hop", "direct", "")
	}
	res.Compare(s, mGetP99.Name, "difference", "proxy-server", "bare-hop", "<= 1")
	res.Note("The proxy and the bare hop serve plain HTTP on loopback and reach the API server over HTTP/2 with TLS, " +
		"as client-go does; the API server serves TLS. Clients read JSON. The bare hop is a process that only " +
		"forwards (test/bench/barehop: the proxy's own reverse proxy and transport), so proxy-server / bare-hop is " +
		"the cost of what fedmesh does per request and bare-hop / direct the cost of any hop on these 2 cores. Both " +
		"run with GOMAXPROCS=1, as the injected proxy does at its default CPU request.")
	res.Note("Proxy RSS is read from /proc after the informer synced (after the earlier repetitions' GETs and bursts "+
		"too). proxy-server-one-namespace is a proxy owning one benchmark namespace (%d pods) whose informer lists "+
		"and watches every namespace as the others' do and gets the same GETs and burst of events, all in its "+
		"namespace: proxy-server / proxy-server-one-namespace is what passing every pod costs the proxy's memory "+
		"(the bar: it must not depend on the object count).", perNS)
	return nil
}

// overheadRun measures one client path: through p when p is set, else straight to the API server.
func overheadRun(admin kubernetes.Interface, cfg *rest.Config, p *proxy, namespaces []string, podsPerNS, gets, burst int) func(context.Context, int) (map[string]float64, error) {
	return func(ctx context.Context, _ int) (map[string]float64, error) {
		cfg := unlimited(cfg)
		out := map[string]float64{}
		sync, err := podsync.Sync(ctx, cfg, nil)
		if err != nil {
			return nil, err
		}
		out[mSync.Name], out[mSyncBytes.Name], out[mHeap.Name] = sync.Seconds, suite.MiB(sync.Bytes), suite.MiB(sync.HeapBytes)
		if p != nil {
			u, err := p.usage()
			if err != nil {
				return nil, err
			}
			out[mProxyRSS.Name] = suite.MiB(u.RSSBytes)
		}
		cs := kubernetes.NewForConfigOrDie(cfg)
		if out[mGetP50.Name], out[mGetP99.Name], err = getLatency(ctx, cs, namespaces[0], gets); err != nil {
			return nil, err
		}
		before := suite.Usage{}
		if p != nil {
			before, _ = p.usage()
		}
		seconds, err := watchBurst(ctx, admin, cs, namespaces, podsPerNS, burst)
		if err != nil {
			return nil, err
		}
		out[mBurst.Name] = seconds
		if p != nil {
			after, _ := p.usage()
			out[mProxyCPU.Name] = (after.CPUSeconds - before.CPUSeconds) * 1000 / float64(burst)
		}
		return out, nil
	}
}

// burstSeq makes every burst's annotation values new.
var burstSeq atomic.Int64

// getLatency GETs one pod n times in a row and returns the median and 99th percentile in milliseconds.
func getLatency(ctx context.Context, cs kubernetes.Interface, ns string, n int) (p50, p99 float64, err error) {
	d := make([]float64, 0, n)
	for range n {
		start := time.Now()
		if _, err := cs.CoreV1().Pods(ns).Get(ctx, benchPod(ns, 0).Name, metav1.GetOptions{}); err != nil {
			return 0, 0, err
		}
		d = append(d, float64(time.Since(start).Microseconds())/1000)
	}
	slices.Sort(d)
	return suite.Quantile(d, 0.5), suite.Quantile(d, 0.99), nil
}

// watchBurst makes n updates of pods, then watches from the resource version before them and returns the time
// until the n-th event arrives: the API server replays the burst from its watch cache as fast as the path takes
// it, so the writes (the same for every path) are not what is timed.
func watchBurst(ctx context.Context, admin, watcher kubernetes.Interface, namespaces []string, podsPerNS, n int) (float64, error) {
	list, err := admin.CoreV1().Pods(namespaces[0]).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return 0, err
	}
	from := list.ResourceVersion
	perNS := max(1, n/len(namespaces))
	if err := parallel(n, 32, func(i int) error {
		ns := namespaces[(i/perNS)%len(namespaces)]
		// A value never written before: a patch that changes nothing makes no event.
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"bench/burst":"%d-%d"}}}`, burstSeq.Add(1), i)
		_, err := admin.CoreV1().Pods(ns).Patch(ctx, benchPod(ns, i%perNS%podsPerNS).Name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	}); err != nil {
		return 0, fmt.Errorf("burst writes: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	start := time.Now()
	w, err := watcher.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{ResourceVersion: from, AllowWatchBookmarks: false})
	if err != nil {
		return 0, err
	}
	defer w.Stop()
	for got := 0; got < n; {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return 0, fmt.Errorf("watch closed after %d of %d events", got, n)
			}
			if ev.Type == watch.Error {
				return 0, fmt.Errorf("watch error after %d events: %v", got, ev.Object)
			}
			if ev.Type == watch.Modified {
				got++
			}
		case <-ctx.Done():
			return 0, fmt.Errorf("watch delivered %d of %d events: %w", got, n, ctx.Err())
		}
	}
	return time.Since(start).Seconds(), nil
}
