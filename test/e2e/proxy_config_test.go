package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/pkg/shard"
	"github.com/fedmesh/fedmesh/pkg/xds"
	"github.com/fedmesh/fedmesh/test/cluster"
)

// An ownership change ends the operator's watches, and it relists under the new ranges: after shard 0 is given
// every namespace, its operator reconciles the ConfigMaps it could not see before. A bad configuration is refused
// and the last good one keeps serving.
func TestOwnershipChangeMakesTheOperatorRelist(t *testing.T) {
	t.Parallel()
	c := cluster.New(t, cluster.Options{})
	ctx := context.Background()
	admin := c.Clientset()
	namespaces := teamNamespaces(t, admin, 10)
	for _, ns := range namespaces {
		if _, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	identity, err := c.ServiceAccount(ctx, "operators", "op", operatorRules)
	if err != nil {
		t.Fatal(err)
	}
	half := shard.SplitByNamespaces(namespaces, []shard.ShardID{0, 1})
	p := startProxy(t, c, config.Ownership{Epoch: 1, Shard: 0, Assignment: half}, "")
	op := startOperator(t, p.config(identity), manager.Options{})
	var foreign string
	for _, ns := range namespaces {
		if owner, _ := half.NamespaceOwner(ns); owner == 0 {
			eventually(t, 20*time.Second, "shard 0 reconciles "+ns, func() (bool, error) { return op.saw(ns + "/app"), nil })
		} else {
			foreign = ns
		}
	}
	if op.saw(foreign + "/app") {
		t.Fatalf("shard 0 saw %s before it owned it", foreign)
	}

	// A bad configuration changes nothing.
	writeProxyConfig(t, p.configPath, config.Ownership{Epoch: 2, Shard: 0, Assignment: shard.Assignment{0: shard.Full()}, FilterMode: "sideways"}, "")
	eventually(t, 10*time.Second, "the bad configuration is refused", func() (bool, error) {
		return strings.Contains(p.output(), "configuration refused"), nil
	})
	if op.saw(foreign + "/app") {
		t.Fatal("a refused configuration changed what the shard sees")
	}
	cs := kubernetes.NewForConfigOrDie(p.config(identity))
	if _, err := cs.CoreV1().ConfigMaps(foreign).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("write to %s after a refused configuration: %v, want the fence", foreign, err)
	}

	writeProxyConfig(t, p.configPath, config.Ownership{Epoch: 2, Shard: 0, Assignment: shard.Assignment{0: shard.Full()}}, "")
	for _, ns := range namespaces {
		eventually(t, 30*time.Second, "shard 0 relists and reconciles "+ns, func() (bool, error) { return op.saw(ns + "/app"), nil })
	}
	if got := p.metric(t, "fedmesh_proxy_watches_ended_total"); got == "" || got == "0" {
		t.Errorf("watches ended on the ownership change: %q", got)
	}
	if _, err := cs.CoreV1().ConfigMaps(foreign).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("write to %s once it is owned: %v", foreign, err)
	}
}

// The proxy takes its configuration from an xDS server (go-control-plane with pkg/xds, as the manager serves):
// it ACKs a good ownership and enforces it, NACKs a bad one with the reason and keeps the last good one, and an
// unauthenticated proxy gets nothing.
func TestProxyConfigurationOverXDS(t *testing.T) {
	t.Parallel()
	c := cluster.New(t, cluster.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	snap := xds.NewSnapshotter(xds.SnapshotterOptions{VersionPrefix: "test-"})
	callbacks := xds.NewCallbacks(func(_ context.Context, token string, _ *core.Node) error {
		if token != "good-token" {
			return errors.New("unknown token")
		}
		return nil
	})
	server := grpc.NewServer()
	xds.RegisterADS(ctx, server, snap, callbacks)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go server.Serve(lis)
	defer server.Stop()

	sc := ktypes.NamespacedName{Namespace: "operators", Name: "op"}
	name := xds.ResourceName(sc, 0)
	key := xds.ResourceKey{TypeURL: xds.OwnershipType, Name: name}
	publish := func(version string, own any) {
		t.Helper()
		doc, err := json.Marshal(own)
		if err != nil {
			t.Fatal(err)
		}
		if err := snap.Set(xds.OwnershipType, name, doc, version); err != nil {
			t.Fatal(err)
		}
	}
	nodeState := func() xds.AckState {
		for _, n := range callbacks.Acks() {
			return n.Resources[key]
		}
		return xds.AckState{}
	}

	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("bad-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, probes := freeAddr(t), freeAddr(t)
	output := startBinary(t, fedmeshBinary(t, "proxy"), "--upstream-kubeconfig", c.Kubeconfig(),
		"--listen-address", addr, "--probe-address", probes, "--state-dir", filepath.Join(dir, "state"),
		"--xds-address", lis.Addr().String(), "--xds-insecure", "--xds-token-file", tokenFile,
		"--sharding-config", "operators/op", "--shard", "0", "--pod-name", "op-0", "--pod-namespace", "operators")
	publish("1", config.Ownership{Epoch: 1, Shard: 0, Assignment: shard.Assignment{0: shard.Split(2)[0], 1: shard.Split(2)[1]}})
	waitHTTP(t, "http://"+probes+"/healthz", output)
	time.Sleep(time.Second)
	if code, _ := httpGet("http://" + probes + "/readyz"); code != 503 || len(callbacks.Acks()) != 0 {
		t.Fatalf("with a refused token: /readyz %d and %d nodes known; want 503 and none", code, len(callbacks.Acks()))
	}

	// The token file is re-read at every reconnect.
	if err := os.WriteFile(tokenFile, []byte("good-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitHTTP(t, "http://"+probes+"/readyz", output)
	eventually(t, 10*time.Second, "the proxy ACKs version 1", func() (bool, error) { return nodeState().Acked == "1", nil })

	publish("2", map[string]any{"epoch": 2, "shard": 0, "assignment": map[string]string{"0": shard.Full().String()}, "filterMode": "sideways"})
	eventually(t, 10*time.Second, "the proxy NACKs version 2", func() (bool, error) { return nodeState().Nacked == "2", nil })
	if st := nodeState(); st.Acked != "1" || !strings.Contains(st.Error, `filterMode "sideways"`) {
		t.Errorf("after the bad version: %+v; want version 1 still ACKed and the reason in the NACK", st)
	}
	cfg := c.Config()
	cfg.Host = "http://" + addr
	cfg.TLSClientConfig.CAData = nil
	cs := kubernetes.NewForConfigOrDie(cfg)
	var notOwned string
	for i := 0; notOwned == ""; i++ {
		ns := "ns-" + string(rune('a'+i))
		if !shard.Split(2)[0].ContainsNamespace(ns) {
			notOwned = ns
		}
	}
	_, err = cs.CoreV1().ConfigMaps(notOwned).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "belongs to shard 1") {
		t.Errorf("write outside version 1's ranges: %v, want the fence naming shard 1", err)
	}

	publish("3", config.Ownership{Epoch: 3, Shard: 0, Assignment: shard.Assignment{0: shard.Full()}})
	eventually(t, 10*time.Second, "the proxy ACKs version 3", func() (bool, error) { return nodeState().Acked == "3", nil })
	_, err = cs.CoreV1().ConfigMaps(notOwned).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	if err == nil || apierrors.IsForbidden(err) {
		// The namespace does not exist: the API server, not the fence, must answer now.
		t.Errorf("write once owned: %v, want the API server's NotFound", err)
	}
}
