package xds

import (
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
)

// Keepalives end a stream whose peer went silent (a partition sends no FIN) within about 15 s, so both sides
// learn that the proxy lost contact: the proxy for its ownership lease, the manager for its handover.
var (
	// ClientKeepalive is what the proxy's client pings with.
	ClientKeepalive = keepalive.ClientParameters{Time: 10 * time.Second, Timeout: 5 * time.Second, PermitWithoutStream: true}
	// ServerKeepalive are the manager's server options matching ClientKeepalive.
	ServerKeepalive = []grpc.ServerOption{
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 10 * time.Second, Timeout: 5 * time.Second}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
	}
)
