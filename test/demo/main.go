// Command demo runs a local federation on loopback: a host API server with fedmesh's CRDs installed and member
// API servers, each with its own etcd. It prints how to reach them and stops everything cleanly on Ctrl-C.
// `make demo` runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/fedmesh/fedmesh/test/cluster"
)

func main() {
	members := flag.Int("members", 2, "how many member clusters to run")
	crds := flag.String("crds", "charts/fedmesh/crds", "directory of fedmesh's CRDs, installed on the host")
	flag.Parse()
	if err := run(*members, *crds); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(members int, crds string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	fmt.Printf("starting a host and %d member API servers (etcd + kube-apiserver each) on 127.0.0.1...\n", members)
	start := time.Now()
	fed, err := cluster.StartFederation(ctx, cluster.FederationOptions{Members: members})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println("stopping: API servers first, then etcd...")
		fed.Stop()
		fmt.Println("stopped; nothing left behind")
	}()
	if err := fed.Host.InstallCRDs(ctx, crds); err != nil {
		return err
	}
	abs, _ := filepath.Abs(crds)
	// The kubectl that hack/build-binaries.sh built works on a machine without one.
	kubectl := "kubectl"
	if path := filepath.Join(cluster.DefaultBinDir(), "kubectl"); fileExists(path) {
		kubectl = path
	}
	fmt.Printf("ready in %s; fedmesh CRDs from %s installed on the host\n\n", time.Since(start).Round(time.Second), abs)
	for _, c := range fed.All() {
		fmt.Printf("  %-8s %s\n           %s --kubeconfig %s get ns\n", c.Name(), c.Host(), kubectl, c.Kubeconfig())
	}
	fmt.Printf("\n  try:     %s --kubeconfig %s api-resources --categories=fedmesh\n", kubectl, fed.Host.Kubeconfig())
	fmt.Printf("           %s --kubeconfig %s explain propagationpolicy.spec.placement\n", kubectl, fed.Host.Kubeconfig())
	fmt.Println("\npress Ctrl-C to stop")
	<-ctx.Done()
	return nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
