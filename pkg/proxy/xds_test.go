package proxy_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/test/bufconn"
	ktypes "k8s.io/apimachinery/pkg/types"

	"github.com/fedmesh/fedmesh/pkg/proxy"
	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/pkg/shard"
	"github.com/fedmesh/fedmesh/pkg/xds"
)

// A proxy restarted with its persisted ownership (epoch 7) refuses a manager's older epoch as a conflict, and its
// NACK says it holds epoch 7, though its xDS client, new, accepted nothing yet: a manager whose status was lost
// learns from it where to start again.
func TestRestartedProxysRefusalSaysWhatItEnforces(t *testing.T) {
	halves := shard.Split(2)
	ownership := func(epoch int) []byte {
		return fmt.Appendf(nil, `{"epoch":%d,"shard":0,"assignment":{"0":%q,"1":%q}}`, epoch, halves[0].String(), halves[1].String())
	}
	dir := t.TempDir()
	before, _ := config.NewStore(dir)
	if err := before.Apply(config.KindOwnership, "e7.g1", ownership(7)); err != nil {
		t.Fatal(err)
	}
	store, err := config.NewStore(dir) // the proxy restarts
	if err != nil || store.Current().OwnershipVersion != "e7.g1" {
		t.Fatalf("persisted ownership %q, %v", store.Current().OwnershipVersion, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sc := ktypes.NamespacedName{Namespace: "ops", Name: "op"}
	node := xds.NodeMetadata{ShardingConfig: sc, Shard: 0, Pod: ktypes.NamespacedName{Namespace: "ops", Name: "op-0"}}
	snap := xds.NewSnapshotter(xds.SnapshotterOptions{VersionPrefix: "a"})
	cb := xds.NewCallbacks(func(context.Context, string, *core.Node) error { return nil })
	lis := bufconn.Listen(1 << 20)
	g := grpc.NewServer()
	xds.RegisterADS(ctx, g, snap, cb)
	go func() { _ = g.Serve(lis) }()
	defer g.Stop()
	if err := snap.Set(xds.OwnershipType, xds.ResourceName(sc, 0), ownership(1), "e1.g1"); err != nil {
		t.Fatal(err)
	}
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("t"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := xds.NewClient(xds.ClientOptions{Target: "passthrough:///manager", Insecure: true, TokenFile: token, Node: node,
		Apply: proxy.XDSApply(store), TypeURLs: []string{xds.OwnershipType},
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) })}})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Run(ctx) }()

	key := xds.ResourceKey{TypeURL: xds.OwnershipType, Name: xds.ResourceName(sc, 0)}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if st := cb.Acks()[node.NodeID()].Resources[key]; st.Nacked == "e1.g1" {
			if st.Acked != "e7.g1" || !st.Conflict {
				t.Fatalf("the manager's record of the restarted proxy: %+v; want e7.g1 held, in conflict", st)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no NACK of e1.g1: %+v", cb.Acks())
		}
	}
}
