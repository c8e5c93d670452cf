package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Options says which control plane to run. The zero value is an etcd + kube-apiserver pair.
type Options struct {
	// Name labels logs and temp dirs; defaults to "cluster".
	Name string
	// BinDir holds etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok and stages.yaml.
	// Defaults to $FEDMESH_BIN_DIR, else the cache that hack/build-binaries.sh fills.
	BinDir string
	// DisableShardedListWatch turns off the API server's ShardedListAndWatch gate (KEP-5866), as on a server
	// that does not filter by shard; the server then ignores shardSelector.
	DisableShardedListWatch bool
	// ControllerManager runs kube-controller-manager, so Deployments get ReplicaSets and Pods.
	ControllerManager bool
	// FakeNodes, when positive, runs kube-scheduler and kwok and registers that many fake nodes, so Pods are
	// scheduled and become Running. It implies ControllerManager.
	FakeNodes int
	// APIServerFlags are appended to kube-apiserver's command line.
	APIServerFlags []string
	// ControllerManagerFlags are appended to kube-controller-manager's command line (a later flag wins, so
	// they may override the defaults: a benchmark raises --kube-api-qps so the members' controllers do not
	// bound what it measures).
	ControllerManagerFlags []string
	// SchedulerFlags are appended to kube-scheduler's command line (with FakeNodes).
	SchedulerFlags []string
	// StartTimeout bounds how long Start waits for every component to be ready; defaults to 90s.
	StartTimeout time.Duration
}

func (o *Options) setDefaults() error {
	if o.Name == "" {
		o.Name = "cluster"
	}
	if o.BinDir == "" {
		o.BinDir = DefaultBinDir()
	}
	if o.FakeNodes > 0 {
		o.ControllerManager = true
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 90 * time.Second
	}
	need := []string{"etcd", "kube-apiserver"}
	if o.ControllerManager {
		need = append(need, "kube-controller-manager")
	}
	if o.FakeNodes > 0 {
		need = append(need, "kube-scheduler", "kwok", "stages.yaml")
	}
	for _, b := range need {
		if _, err := os.Stat(filepath.Join(o.BinDir, b)); err != nil {
			return fmt.Errorf("%s not found in %s: build the test binaries with `make binaries` "+
				"(hack/build-binaries.sh) or set FEDMESH_BIN_DIR", b, o.BinDir)
		}
	}
	return nil
}

// DefaultBinDir is where hack/build-binaries.sh links the binaries: $FEDMESH_BIN_DIR if set, else
// $FEDMESH_CACHE/bin, else $XDG_CACHE_HOME/fedmesh/bin, else ~/.cache/fedmesh/bin.
func DefaultBinDir() string {
	if d := os.Getenv("FEDMESH_BIN_DIR"); d != "" {
		return d
	}
	if d := os.Getenv("FEDMESH_CACHE"); d != "" {
		return filepath.Join(d, "bin")
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "fedmesh", "bin")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "fedmesh", "bin")
}
