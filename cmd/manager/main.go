// Command manager is fedmesh's mesh manager: it owns ShardingConfig and TrafficPolicy, assigns namespaces to
// shards, and serves each proxy its configuration.
package main

import (
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/fedmesh/fedmesh/pkg/apis"
	"github.com/fedmesh/fedmesh/pkg/cli"
)

func main() {
	cli.Main(cli.NewCommand("manager", "fedmesh mesh manager: shard assignment, proxy configuration, canaries",
		&cli.ControllerOptions{
			DefaultLeaseName: "fedmesh-manager",
			AddToScheme:      []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apis.AddToScheme},
		}))
}
