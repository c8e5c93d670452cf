// Command manager is fedmesh's mesh manager: it owns ShardingConfig and TrafficPolicy, assigns namespaces to
// shards, and serves each proxy its configuration.
package main

import (
	"context"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/fedmesh/fedmesh/pkg/cli"
)

type options struct {
	manager cli.ManagerFlags
}

func (o *options) AddFlags(fs *pflag.FlagSet) { o.manager.AddFlags(fs, "fedmesh-manager") }
func (o *options) Validate() error            { return o.manager.Validate() }

func (o *options) Run(ctx context.Context) error {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	mgr, err := o.manager.NewManager(scheme)
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

func main() {
	cli.Main(cli.NewCommand("manager", "fedmesh mesh manager: shard assignment, proxy configuration, canaries", &options{}))
}
