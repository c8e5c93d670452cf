// Command federator runs fedmesh's federation controllers (detector, scheduler, binding, execution, status)
// against the host cluster, sharded behind the proxy like any other operator.
package main

import (
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/fedmesh/fedmesh/pkg/apis"
	"github.com/fedmesh/fedmesh/pkg/cli"
)

func main() {
	cli.Main(cli.NewCommand("federator", "fedmesh federation controllers: propagate workloads to member clusters",
		&cli.ControllerOptions{
			DefaultLeaseName: "fedmesh-federator",
			AddToScheme:      []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apis.AddToScheme},
		}))
}
