// Command demo runs the whole of fedmesh locally, on loopback: a host API server and member API servers (each
// with its own etcd; members also run kube-controller-manager, kube-scheduler and kwok fake nodes so pods really
// run), the manager, and the federator as shards each behind its own proxy. It applies an example app — a
// Deployment divided 2:1, an image override for one cluster, a ConfigMap dependency — prints where each replica
// runs, the aggregated status and the app's pods in every member (kubectl-fedmesh list), and keeps everything
// running until Ctrl-C. `make demo` runs it.
package main

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/test/cluster"
	"github.com/fedmesh/fedmesh/test/fedrun"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

//go:embed app.yaml
var app []byte

const appNamespace = "demo"

func main() {
	members := flag.Int("members", 2, "how many member clusters to run (the example app uses member1 and member2)")
	shards := flag.Int("shards", 2, "how many federator shards, each behind its own proxy; 0 runs one federator without proxies")
	exit := flag.Bool("exit", false, "stop once the app's status is printed instead of running until Ctrl-C")
	flag.Parse()
	if *members < 2 {
		fmt.Fprintln(os.Stderr, "demo: --members must be at least 2: the example app is divided over member1 and member2")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *members, *shards, *exit); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, members, shards int, exit bool) error {
	start := time.Now()
	fmt.Printf("building the manager, proxy and federator...\n")
	binDir, err := os.MkdirTemp("", "fedmesh-demo-bin-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(binDir)
	if err := fedrun.Build(fedrun.SourceRoot(), binDir, "./cmd/kubectl-fedmesh"); err != nil {
		return err
	}

	fmt.Printf("starting a host and %d members (etcd + kube-apiserver each; members with kube-controller-manager, kube-scheduler and kwok nodes)...\n", members)
	fed, err := fedtest.New(ctx, fedtest.Options{Members: members, Workloads: true})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println("stopping: federator, proxies and manager, then the API servers and etcd...")
		fed.Stop()
		fmt.Println("stopped; nothing left behind")
	}()
	if err := fed.Host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: appNamespace}}); err != nil {
		return err
	}

	what := fmt.Sprintf("the manager and %d federator shards, each behind its own proxy", shards)
	if shards == 0 {
		what = "one federator, straight on the host"
	}
	fmt.Printf("starting %s...\n", what)
	fr, err := fedrun.Start(ctx, fedrun.Options{Host: fed.Federation.Host, Client: fed.Host, BinDir: binDir, Shards: shards,
		FederatorArgs: []string{"--cluster-probe-interval", "2s"}})
	if err != nil {
		return err
	}
	defer fr.Stop()

	fmt.Printf("waiting for the members to be Ready...\n")
	if err := fedtest.WaitClustersReady(ctx, fed.Host, members, time.Minute); err != nil {
		return fmt.Errorf("%w\n%s", err, fr.Logs(20))
	}
	fmt.Printf("applying the example app (test/demo/app.yaml) to the host...\n")
	if err := apply(ctx, fed); err != nil {
		return err
	}
	if err := waitReady(ctx, fed, 3*time.Minute); err != nil {
		return fmt.Errorf("%w\n%s", err, fr.Logs(20))
	}
	fmt.Printf("\nready in %s\n\n", time.Since(start).Round(time.Second))
	if err := report(ctx, os.Stdout, fed); err != nil {
		return err
	}
	if err := listPods(ctx, binDir, fed); err != nil {
		return err
	}
	printAccess(fed)
	if exit {
		return nil
	}
	fmt.Println("\npress Ctrl-C to stop")
	<-ctx.Done()
	return nil
}

// apply creates every object of app.yaml in the host.
func apply(ctx context.Context, fed *fedtest.Federation) error {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(app), 4096)
	for {
		var obj unstructured.Unstructured
		if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		if len(obj.Object) == 0 {
			continue
		}
		if err := fed.Host.Create(ctx, &obj); err != nil {
			return fmt.Errorf("%s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
}

// waitReady waits until the template reports all 6 replicas ready from the members.
func waitReady(ctx context.Context, fed *fedtest.Federation, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := ""
	for {
		var d appsv1.Deployment
		if err := fed.Host.Get(ctx, types.NamespacedName{Namespace: appNamespace, Name: "web"}, &d); err == nil {
			if d.Status.ReadyReplicas == *d.Spec.Replicas && allApplied(ctx, fed) {
				return nil
			}
			if now := fmt.Sprintf("  web: %d of %d replicas ready in the members", d.Status.ReadyReplicas, *d.Spec.Replicas); now != last {
				fmt.Println(now)
				last = now
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the app did not become ready: %s", last)
		case <-time.After(time.Second):
		}
	}
}

// allApplied reports whether the binding's status shows the app applied and healthy in every cluster it targets.
func allApplied(ctx context.Context, fed *fedtest.Federation) bool {
	var rb workv1alpha1.ResourceBinding
	if err := fed.Host.Get(ctx, types.NamespacedName{Namespace: appNamespace, Name: names.Binding("Deployment", "web")}, &rb); err != nil {
		return false
	}
	for _, item := range rb.Status.AggregatedStatus {
		if !item.Applied || item.Health != workv1alpha1.ResourceHealthy {
			return false
		}
	}
	return len(rb.Status.AggregatedStatus) == len(rb.Spec.Clusters) && len(rb.Spec.Clusters) > 0
}

// report prints where the replicas run and the aggregated status.
func report(ctx context.Context, out io.Writer, fed *fedtest.Federation) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "CLUSTER\tREPLICAS\tREADY\tIMAGE\tCONFIGMAP")
	for _, m := range fed.Members {
		cs := m.Clientset()
		d, err := cs.AppsV1().Deployments(appNamespace).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			fmt.Fprintf(w, "%s\t-\t-\t-\t-\n", m.Name())
			continue
		}
		cm := "missing"
		if _, err := cs.CoreV1().ConfigMaps(appNamespace).Get(ctx, "web-config", metav1.GetOptions{}); err == nil {
			cm = "web-config"
		}
		fmt.Fprintf(w, "%s\t%d\t%d\t%s\t%s\n", m.Name(), *d.Spec.Replicas, d.Status.ReadyReplicas, d.Spec.Template.Spec.Containers[0].Image, cm)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	var rb workv1alpha1.ResourceBinding
	if err := fed.Host.Get(ctx, types.NamespacedName{Namespace: appNamespace, Name: names.Binding("Deployment", "web")}, &rb); err != nil {
		return err
	}
	fmt.Fprintf(out, "\naggregated status (ResourceBinding %s/%s):\n", rb.Namespace, rb.Name)
	w = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "CLUSTER\tAPPLIED\tHEALTH\tSTATUS")
	for _, item := range rb.Status.AggregatedStatus {
		status := "-"
		if item.Status != nil {
			status = string(item.Status.Raw)
		}
		fmt.Fprintf(w, "%s\t%t\t%s\t%s\n", item.ClusterName, item.Applied, item.Health, status)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	var d appsv1.Deployment
	if err := fed.Host.Get(ctx, types.NamespacedName{Namespace: appNamespace, Name: "web"}, &d); err != nil {
		return err
	}
	fmt.Fprintf(out, "\ntemplate %s/web in the host: replicas %d, ready %d, available %d, updated %d\n",
		appNamespace, d.Status.Replicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas, d.Status.UpdatedReplicas)
	return nil
}

func printAccess(fed *fedtest.Federation) {
	// The kubectl that hack/build-binaries.sh built works on a machine without one.
	kubectl := "kubectl"
	if path := filepath.Join(cluster.DefaultBinDir(), "kubectl"); fileExists(path) {
		kubectl = path
	}
	fmt.Println()
	for _, c := range fed.All() {
		fmt.Printf("  %-8s %s --kubeconfig %s get deploy -n %s\n", c.Name(), kubectl, c.Kubeconfig(), appNamespace)
	}
	host := fed.Federation.Host.Kubeconfig()
	fmt.Printf("\n  try:     %s --kubeconfig %s get clusters,shardingconfigs -A\n", kubectl, host)
	fmt.Printf("           %s --kubeconfig %s get resourcebindings,works -n %s\n", kubectl, host, appNamespace)
	fmt.Printf("           %s --kubeconfig %s scale deploy/web -n %s --replicas 9\n", kubectl, host, appNamespace)
	fmt.Printf("           go run ./cmd/kubectl-fedmesh --host-kubeconfig %s list pods -n %s -o wide\n", host, appNamespace)
}

// listPods prints the app's pods in every member, as the kubectl plugin lists them.
func listPods(ctx context.Context, binDir string, fed *fedtest.Federation) error {
	args := []string{"--host-kubeconfig", fed.Federation.Host.Kubeconfig(), "list", "pods", "-n", appNamespace}
	fmt.Printf("\npods in the members (kubectl-fedmesh %s):\n", strings.Join(args[2:], " "))
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "kubectl-fedmesh"), args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
