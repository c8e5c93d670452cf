// Command kubectl-fedmesh is fedmesh's kubectl plugin. It registers member clusters with the federation and shows
// what the federation and the sharding mesh are doing; every command but interpret talks to the host cluster of
// --host-kubeconfig (default $KUBECONFIG, then ~/.kube/config):
//
//	kubectl-fedmesh join NAME --kubeconfig MEMBER.kubeconfig    register a member (identity in it, Cluster in the host)
//	kubectl-fedmesh unjoin NAME [--kubeconfig MEMBER.kubeconfig] remove it from both sides
//	kubectl-fedmesh clusters                                   members' health and capacity
//	kubectl-fedmesh shards                                     each ShardingConfig's shards, epoch and proxies
//	kubectl-fedmesh owner NAMESPACE                            which shard owns a namespace, and why
//	kubectl-fedmesh get KIND NAME [-n NS]                      a template's placement, per-cluster status, Works
//	kubectl-fedmesh list KIND[,KIND...] [NAME...] [-n NS | -A] [-w] objects in the members, with a CLUSTER column
//
// The status commands print tables, or -o json|yaml (list also -o wide). The interpret subcommand runs a
// resource interpreter operation offline, on objects in files, so that users can test
// ResourceInterpreterCustomizations before applying them:
//
//	kubectl-fedmesh interpret -f CUSTOMIZATION.yaml --operation OP [--desired-file F] [--observed-file F]
//	    [--status-file F] [--desired-replica N] [-o json|yaml]
//	kubectl-fedmesh interpret -f CUSTOMIZATION.yaml --check
//
// Without -f, the interpreters built into fedmesh (bundled customizations, then native) answer.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/fedmesh/fedmesh/pkg/version"
)

// exitFailure is the exit code of every error, usage errors included, as the interpret subcommand specifies.
const exitFailure = 1

func main() {
	// client-go logs what it also returns (a member's discovery that failed, twice over); the commands report
	// every error themselves, once. The API servers' warnings (a deprecated API) still reach stderr, as kubectl
	// prints them.
	klog.SetLogger(logr.Discard())
	rest.SetDefaultWarningHandler(rest.NewWarningWriter(os.Stderr, rest.WarningWriterOptions{Deduplicate: true}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the command line args and returns the exit code; errors are written to stderr.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCommand(stdin)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", root.Name(), err)
		return exitFailure
	}
	return 0
}

func newRootCommand(stdin io.Reader) *cobra.Command {
	root := &cobra.Command{
		Use:           "kubectl-fedmesh",
		Short:         "fedmesh kubectl plugin",
		Version:       version.Get().String(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	host := &hostOptions{}
	host.addFlags(root.PersistentFlags())
	root.AddCommand(
		newJoinCommand(host),
		newUnjoinCommand(host),
		newClustersCommand(host),
		newShardsCommand(host),
		newOwnerCommand(host),
		newGetCommand(host),
		newListCommand(host),
		newInterpretCommand(stdin),
	)
	return root
}
