package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/pkg/shard"
	"github.com/fedmesh/fedmesh/test/cluster"
)

// BenchmarkProxyVersusDirect measures, in one run against one API server, the cost of going through the proxy:
// GET latency (p50, p99), a LIST of 10,000 ConfigMaps across 100 namespaces, and watch events per second. It
// reports each as a ratio proxy/direct (latencies; >1 is slower) or proxy/direct throughput (<1 is slower), for
// the proxy in client-filter mode (the proxy parses every item and event) and in server mode.
//
//	go test ./test/e2e -run '^$' -bench ProxyVersusDirect -benchtime 1x
func BenchmarkProxyVersusDirect(b *testing.B) {
	c := cluster.New(b, cluster.Options{})
	ctx := context.Background()
	admin := kubernetes.NewForConfigOrDie(fastConfig(c.Config()))
	var namespaces []string
	for i := range 100 {
		namespaces = append(namespaces, fmt.Sprintf("bench-%03d", i))
	}
	parallel(namespaces, func(ns string) {
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			b.Error(err)
			return
		}
		for j := range 100 {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%03d", j)}, Data: map[string]string{"k": "v"}}
			if _, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	// The proxy owns one range holding every bench namespace, so both paths return the same 10,000 objects and
	// only the overhead differs; it is not the whole space, so the proxy really filters.
	lo, hi := shard.NamespaceHash(namespaces[0]), shard.NamespaceHash(namespaces[0])
	for _, ns := range namespaces {
		lo, hi = min(lo, shard.NamespaceHash(ns)), max(hi, shard.NamespaceHash(ns))
	}
	owned := shard.NewSet(shard.Range{First: lo, Last: hi})
	all := shard.Assignment{0: owned, 1: owned.Complement()}

	direct := admin
	for _, mode := range []meshv1alpha1.FilterMode{meshv1alpha1.FilterModeClient, meshv1alpha1.FilterModeServer} {
		p := startProxy(b, c, config.Ownership{Shard: 0, Assignment: all, FilterMode: mode}, "")
		proxied := kubernetes.NewForConfigOrDie(fastConfig(p.config(c.Config())))
		b.Run(string(mode), func(b *testing.B) {
			for range b.N {
				d50, d99 := getLatency(b, direct)
				p50, p99 := getLatency(b, proxied)
				b.ReportMetric(p50.Seconds()/d50.Seconds(), "get-p50-ratio")
				b.ReportMetric(p99.Seconds()/d99.Seconds(), "get-p99-ratio")
				b.ReportMetric(listTime(b, proxied).Seconds()/listTime(b, direct).Seconds(), "list10k-time-ratio")
				b.ReportMetric(watchRate(b, proxied, admin)/watchRate(b, direct, admin), "watch-events-per-s-ratio")
			}
		})
	}
}

func fastConfig(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = -1, 0
	return cfg
}

func parallel(items []string, fn func(string)) {
	var wg sync.WaitGroup
	ch := make(chan string)
	for range 16 {
		wg.Go(func() {
			for it := range ch {
				fn(it)
			}
		})
	}
	for _, it := range items {
		ch <- it
	}
	close(ch)
	wg.Wait()
}

func getLatency(b *testing.B, cs kubernetes.Interface) (p50, p99 time.Duration) {
	var d []time.Duration
	for range 500 {
		start := time.Now()
		if _, err := cs.CoreV1().ConfigMaps("bench-000").Get(context.Background(), "cm-000", metav1.GetOptions{}); err != nil {
			b.Fatal(err)
		}
		d = append(d, time.Since(start))
	}
	slices.Sort(d)
	return d[len(d)/2], d[len(d)*99/100]
}

func listTime(b *testing.B, cs kubernetes.Interface) time.Duration {
	best := time.Duration(1 << 62)
	for range 3 {
		start := time.Now()
		list, err := cs.CoreV1().ConfigMaps("").List(context.Background(), metav1.ListOptions{LabelSelector: ""})
		if err != nil {
			b.Fatal(err)
		}
		if n := len(list.Items); n < 10000 {
			b.Fatalf("listed %d ConfigMaps, want 10000", n)
		}
		best = min(best, time.Since(start))
	}
	return best
}

// watchRate is how many events per second a watch of all ConfigMaps delivers while 2,000 are updated.
func watchRate(b *testing.B, watcher, writer kubernetes.Interface) float64 {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	list, err := watcher.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		b.Fatal(err)
	}
	w, err := watcher.CoreV1().ConfigMaps("").Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	const n = 2000
	go parallel(namespaces20(), func(ns string) {
		for j := range n / 20 {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%03d", j), Namespace: ns}, Data: map[string]string{"k": time.Now().String()}}
			if _, err := writer.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil && ctx.Err() == nil {
				b.Error(err)
				return
			}
		}
	})
	var first time.Time
	for got := 0; got < n; got++ {
		select {
		case <-w.ResultChan():
			if got == 0 {
				first = time.Now()
			}
		case <-time.After(30 * time.Second):
			b.Fatalf("watch delivered %d of %d events", got, n)
		}
	}
	return float64(n-1) / time.Since(first).Seconds()
}

func namespaces20() []string {
	var out []string
	for i := range 20 {
		out = append(out, fmt.Sprintf("bench-%03d", i))
	}
	return out
}
