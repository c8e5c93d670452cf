package scenarios

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/fedmesh/fedmesh/test/fedrun"
	"github.com/fedmesh/fedmesh/test/httpget"
)

// profileChunk is how long each saved CPU profile covers: a run's end is not known ahead, and a profile is only
// written whole, so a run is saved in pieces (merge them with `go tool pprof -proto a b ... > all.pprof`).
const profileChunk = 10 * time.Second

// profiler saves CPU profiles of processes, one piece after another, until stopped, and heap profiles of
// fedmesh's processes on demand.
type profiler struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup

	dir, prefix string
	pprofAddrs  map[string]string // fedmesh's processes by name
	logf        func(string, ...any)
}

// fetchProfile reads one CPU profile of the given seconds.
type fetchProfile func(ctx context.Context, seconds int) ([]byte, error)

// startProfiles profiles run's federators and proxies, and the host kube-apiserver (through host, an admin
// config), into dir, files named prefix-<process>-<piece>.pprof; nil when dir is empty. Errors are reported with
// logf: a profile is a diagnosis, never a reason to fail the benchmark.
func startProfiles(ctx context.Context, dir, prefix string, run *fedrun.Run, host *rest.Config, logf func(string, ...any)) *profiler {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		logf("    profiles: %v", err)
		return nil
	}
	p := &profiler{dir: dir, prefix: prefix, pprofAddrs: map[string]string{}, logf: logf}
	targets := map[string]fetchProfile{}
	if run != nil {
		p.pprofAddrs = run.PprofAddrs()
		for name, addr := range p.pprofAddrs {
			targets[name] = func(ctx context.Context, seconds int) ([]byte, error) {
				return httpget.Body(ctx, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, seconds))
			}
		}
	}
	if cs, err := kubernetes.NewForConfig(host); err == nil {
		targets["host-apiserver"] = func(ctx context.Context, seconds int) ([]byte, error) {
			return cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", strconv.Itoa(seconds)).
				Timeout(time.Duration(seconds)*time.Second + 30*time.Second).DoRaw(ctx)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	p.cancel = cancel
	for name, fetch := range targets {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for piece := 0; ctx.Err() == nil; piece++ {
				path := filepath.Join(dir, fmt.Sprintf("%s-%s-%02d.pprof", prefix, name, piece))
				data, err := fetch(ctx, int(profileChunk.Seconds()))
				if err == nil {
					err = os.WriteFile(path, data, 0o644)
				}
				if err != nil && ctx.Err() == nil {
					logf("    profile %s: %v", path, err)
					return
				}
			}
		}()
	}
	return p
}

// heaps saves a heap profile of each of fedmesh's processes, files named prefix-<process>-heap.pprof: what
// holds their memory once the templates have converged.
func (p *profiler) heaps(ctx context.Context) {
	if p == nil {
		return
	}
	for name, addr := range p.pprofAddrs {
		path := filepath.Join(p.dir, fmt.Sprintf("%s-%s-heap.pprof", p.prefix, name))
		data, err := httpget.Body(ctx, fmt.Sprintf("http://%s/debug/pprof/heap", addr))
		if err == nil {
			err = os.WriteFile(path, data, 0o644)
		}
		if err != nil {
			p.logf("    profile %s: %v", path, err)
		}
	}
}

// stop ends profiling; the pieces in progress are dropped.
func (p *profiler) stop() {
	if p == nil {
		return
	}
	p.cancel()
	p.wg.Wait()
}
