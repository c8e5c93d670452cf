package xds_test

import (
	"context"
	"net"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/grpc"
	ktypes "k8s.io/apimachinery/pkg/types"

	"github.com/fedmesh/fedmesh/pkg/xds"
)

// The manager's side: publish a shard's ownership, serve ADS, and wait until every connected proxy of the shard has
// ACKed it (the revoke step of a handover).
func Example_manager() {
	ctx := context.Background()
	snap := xds.NewSnapshotter(xds.SnapshotterOptions{VersionPrefix: "manager-7f3a-"})
	cb := xds.NewCallbacks(func(ctx context.Context, token string, node *core.Node) error {
		return nil // the manager's TokenReview, checking the token's pod is the node's pod
	})
	g := grpc.NewServer() // with TLS credentials
	xds.RegisterADS(ctx, g, snap, cb)
	lis, _ := net.Listen("tcp", ":18000")
	go g.Serve(lis)

	shardA := xds.ResourceName(ktypes.NamespacedName{Namespace: "ops", Name: "operator"}, 0)
	_ = snap.Set(xds.OwnershipType, shardA, []byte(`{"epoch":8,"ranges":[]}`), "8")
	key := xds.ResourceKey{TypeURL: xds.OwnershipType, Name: shardA}
	for {
		changed := cb.Changed()
		if len(xds.Pending(cb.Acks(), key, "8")) == 0 {
			break
		}
		<-changed
	}
}

// The proxy's side: stream configuration from the manager and apply it.
func Example_proxy() {
	c, err := xds.NewClient(xds.ClientOptions{
		Target:    "fedmesh-manager.fedmesh-system.svc:18000",
		CAFile:    "/var/run/fedmesh/ca.crt",
		TokenFile: "/var/run/secrets/fedmesh/token",
		Node: xds.NodeMetadata{
			ShardingConfig: ktypes.NamespacedName{Namespace: "ops", Name: "operator"},
			Shard:          0,
			Pod:            ktypes.NamespacedName{Namespace: "ops", Name: "operator-0"},
		},
		Apply: func(typeURL string, docs map[string]xds.Document) error {
			return nil // decode, validate, persist and switch to the new configuration, or say why not
		},
	})
	if err != nil {
		return
	}
	_ = c.Run(context.Background())
}
