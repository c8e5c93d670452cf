// Command federator runs fedmesh's federation controllers (detector, scheduler, binding, execution, status)
// against the host cluster, sharded behind the proxy like any other operator.
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

func (o *options) AddFlags(fs *pflag.FlagSet) { o.manager.AddFlags(fs, "fedmesh-federator") }
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
	cli.Main(cli.NewCommand("federator", "fedmesh federation controllers: propagate workloads to member clusters", &options{}))
}
