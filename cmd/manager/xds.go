package main

import (
	"context"
	"crypto/tls"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"

	"github.com/fedmesh/fedmesh/pkg/xds"
)

// Every replica listens for xDS, but only the leader serves it; the others refuse every stream with xds.NotLeader
// (Unavailable, a message that says so, and a detail the proxy tests), and the proxy, which dials afresh for each
// stream, reconnects through the Service about every second until it reaches the leader: sooner than its backoff
// after a failure, which could outgrow the election.
//
// Why not serve from every replica: publishing the same documents from the ShardingConfig status would be easy,
// but a handover is safe only because the leader sees every live proxy acknowledge the revoke before it grants. An
// acknowledgement received by a non-leader lives in that replica's memory; the leader would wait for it until the
// proxy is counted out after --proxy-lease, and meanwhile the proxy, renewed by the non-leader, still owns its
// namespaces. Serving from every replica needs the acknowledgements in the API first.

// xdsServer runs the gRPC server on every replica, elected or not.
type xdsServer struct {
	address  string
	options  []grpc.ServerOption
	register func(context.Context, *grpc.Server)
}

// NeedLeaderElection is false: a non-leader listens too, to refuse streams with a reason instead of a reset.
func (s *xdsServer) NeedLeaderElection() bool { return false }

func (s *xdsServer) Start(ctx context.Context) error {
	lis, err := net.Listen("tcp", s.address)
	if err != nil {
		return err
	}
	server := grpc.NewServer(s.options...)
	s.register(ctx, server)
	go func() {
		<-ctx.Done()
		server.GracefulStop()
	}()
	ctrl.Log.WithName("xds").Info("listening for proxies", "address", lis.Addr().String())
	return server.Serve(lis)
}

// xdsCredentials serve the certificate in certFile and keyFile as it is on disk now, not as it was at start:
// cert-manager renews it into the same Secret well before it expires, and a manager that kept serving the old one
// would have every proxy fail the handshake, and fail closed, once it expired. The watcher (a Runnable) must run
// for changes to be read; until then it serves what it read here.
func xdsCredentials(certFile, keyFile string) (credentials.TransportCredentials, *certwatcher.CertWatcher, error) {
	w, err := certwatcher.New(certFile, keyFile)
	if err != nil {
		return nil, nil, err
	}
	return credentials.NewTLS(&tls.Config{GetCertificate: w.GetCertificate, MinVersion: tls.VersionTLS12}), w, nil
}

// notLeaderMessage is the refusal a non-leader's streams get.
const notLeaderMessage = "this fedmesh manager replica is not the leader; only the leader serves xDS: reconnect (through the Service) to reach it"

// leaderOnly refuses streams until elected is closed, i.e. while this replica is not the leader. A leader that loses
// its election exits (controller-runtime's default), which ends its streams.
func leaderOnly(elected <-chan struct{}) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		select {
		case <-elected:
			return handler(srv, ss)
		default:
			return xds.NotLeader(notLeaderMessage)
		}
	}
}
