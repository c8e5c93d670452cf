package scenarios

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/pkg/shard"
	"github.com/fedmesh/fedmesh/test/bench/suite"
	"github.com/fedmesh/fedmesh/test/cluster"
)

// All is every scenario, in the order the report shows them.
func All() []suite.Scenario {
	return []suite.Scenario{ProxyOverhead(), ShardScaling(), Handover(), Interpreter(), FederationThroughput(), ColdStart()}
}

// unlimited is cfg without client-side rate limits, so they never bound a figure.
func unlimited(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = -1, 0
	return cfg
}

// parallel calls fn for 0..n-1 from workers goroutines and returns the first error.
func parallel(n, workers int, fn func(i int) error) error {
	var next atomic.Int64
	var first atomic.Value
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || first.Load() != nil {
					return
				}
				if err := fn(i); err != nil {
					first.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, ok := first.Load().(error); ok {
		return err
	}
	return nil
}

// benchCluster starts an API server for pods that are only API objects: without the ServiceAccount admission
// plugin, a namespace needs no default service account before its pods are created.
func benchCluster(ctx context.Context, name string) (*cluster.Cluster, error) {
	return cluster.Start(ctx, cluster.Options{Name: name, APIServerFlags: []string{"--disable-admission-plugins=ServiceAccount"}})
}

// podNamespaces names n namespaces bench-0000, bench-0001, ...
func podNamespaces(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("bench-%04d", i)
	}
	return out
}

// createPods creates the namespaces and perNS pods in each, labeled with their hash bucket as the manager's
// label mode would, in parallel.
func createPods(ctx context.Context, cs kubernetes.Interface, namespaces []string, perNS int) error {
	if err := parallel(len(namespaces), 16, func(i int) error {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespaces[i]}}, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	return parallel(len(namespaces)*perNS, 32, func(i int) error {
		ns := namespaces[i%len(namespaces)]
		_, err := cs.CoreV1().Pods(ns).Create(ctx, benchPod(ns, i/len(namespaces)), metav1.CreateOptions{})
		return err
	})
}

func benchPod(ns string, j int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%05d", j), Namespace: ns,
			Labels: map[string]string{"app": "bench", shard.BucketLabel: shard.BucketLabelValue(ns)}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1",
			Resources: corev1.ResourceRequirements{}}}},
	}
}

// proxy is a standalone cmd/proxy (or the bare hop, test/bench/barehop) in front of an API server, serving plain
// HTTP on loopback.
type proxy struct {
	addr string
	proc *cluster.Process
}

// startProxy runs a proxy for shard own.Shard and waits until it serves.
func startProxy(ctx context.Context, binDir string, c *cluster.Cluster, own config.Ownership) (*proxy, error) {
	ownership, err := json.Marshal(own)
	if err != nil {
		return nil, err
	}
	probePort, err := cluster.FreePort()
	if err != nil {
		return nil, err
	}
	probes := fmt.Sprintf("127.0.0.1:%d", probePort)
	args := func(dir, addr string) ([]string, error) {
		cfgPath := filepath.Join(dir, "proxy.json")
		if err := os.WriteFile(cfgPath, fmt.Appendf(nil, `{"ownership": %s, "traffic": {}}`, ownership), 0o600); err != nil {
			return nil, err
		}
		return []string{"--upstream-kubeconfig", c.Kubeconfig(), "--listen-address", addr, "--probe-address", probes,
			"--config", cfgPath, "--state-dir", filepath.Join(dir, "state")}, nil
	}
	return startForwarder(ctx, fmt.Sprintf("proxy-%d", own.Shard), filepath.Join(binDir, "proxy"), args,
		func(string) string { return "http://" + probes + "/readyz" })
}

// startBareHop runs test/bench/barehop in front of c and waits until it forwards.
func startBareHop(ctx context.Context, binDir string, c *cluster.Cluster) (*proxy, error) {
	args := func(_, addr string) ([]string, error) {
		return []string{"--upstream-kubeconfig", c.Kubeconfig(), "--listen-address", addr}, nil
	}
	// The API server answers /version to anyone: through the hop, it proves the hop forwards.
	return startForwarder(ctx, "barehop", filepath.Join(binDir, "barehop"), args,
		func(addr string) string { return "http://" + addr + "/version" })
}

// startForwarder runs bin with args for a free loopback address to serve on, and waits until readyURL of that
// address answers 200.
func startForwarder(ctx context.Context, name, bin string, args func(dir, addr string) ([]string, error), readyURL func(addr string) string) (*proxy, error) {
	dir, err := os.MkdirTemp("", "fedmesh-bench-"+name+"-")
	if err != nil {
		return nil, err
	}
	port, err := cluster.FreePort()
	if err != nil {
		return nil, err
	}
	p := &proxy{addr: fmt.Sprintf("127.0.0.1:%d", port)}
	argv, err := args(dir, p.addr)
	if err != nil {
		return nil, err
	}
	// One thread, as the injected proxy at its default CPU request (50m) runs; the bare hop likewise, for a fair hop.
	if p.proc, err = cluster.StartProcessWithEnv(name, dir, bin, []string{"GOMAXPROCS=1"}, argv...); err != nil {
		return nil, err
	}
	ready := readyURL(p.addr)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if done, err := p.proc.Exited(); done {
			return nil, fmt.Errorf("%s exited (%v): %s", name, err, p.proc.Tail(20))
		}
		if resp, err := http.Get(ready); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			p.stop()
			return nil, fmt.Errorf("%s not ready: %s", name, p.proc.Tail(20))
		}
	}
}

// config points cfg, whose credentials are kept, at the proxy.
func (p *proxy) config(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Host = "http://" + p.addr
	cfg.TLSClientConfig = rest.TLSClientConfig{}
	return cfg
}

func (p *proxy) usage() (suite.Usage, error) { return suite.ReadUsage(p.proc.PID()) }

func (p *proxy) stop() {
	p.proc.Stop(5 * time.Second)
	_ = os.RemoveAll(filepath.Dir(p.proc.LogPath()))
}
