package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"net"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/fedmesh/fedmesh/pkg/xds"
)

// A replica refuses streams with Unavailable and the reason until it is elected, then hands them to the server. The
// refusal is marked as a standby's (xds.IsNotLeader), so that the proxies try again soon rather than back off.
func TestLeaderOnly(t *testing.T) {
	elected := make(chan struct{})
	intercept := leaderOnly(elected)
	served := 0
	handler := func(any, grpc.ServerStream) error { served++; return nil }

	err := intercept(nil, nil, &grpc.StreamServerInfo{}, handler)
	if st, _ := status.FromError(err); st.Code() != codes.Unavailable || st.Message() != notLeaderMessage || served != 0 {
		t.Fatalf("before the election: %v (served %d), want Unavailable %q", err, served, notLeaderMessage)
	}
	if !xds.IsNotLeader(err) {
		t.Fatalf("before the election: %v is not marked as a standby's refusal", err)
	}
	close(elected)
	if err := intercept(nil, nil, &grpc.StreamServerInfo{}, handler); err != nil || served != 1 {
		t.Fatalf("elected: %v (served %d), want the stream served", err, served)
	}
}

// The xDS server presents the certificate on disk: when cert-manager renews it into the Secret and the kubelet
// updates the volume, the next handshake gets the renewed one, with no restart.
func TestXDSServesTheRenewedCertificate(t *testing.T) {
	const serverName = "fedmesh-manager.fedmesh.svc"
	ca := newTestCA(t)
	dir := t.TempDir()
	first := ca.issue(t, serverName)
	writeSecretVolume(t, dir, "..v1", map[string][]byte{"tls.crt": first.certPEM, "tls.key": first.keyPEM, "ca.crt": ca.pem})

	creds, certs, err := xdsCredentials(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	// The watcher polls too, besides its file events: a short poll keeps the test from depending on whether its
	// watches were in place before the files changed.
	certs.WithWatchInterval(200 * time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	watching := make(chan error, 1)
	go func() { watching <- certs.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-watching })
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	server := grpc.NewServer(grpc.Creds(creds))
	go func() { _ = server.Serve(lis) }()
	t.Cleanup(server.Stop)

	handshake := func() []byte {
		t.Helper()
		conn, err := tls.Dial("tcp", lis.Addr().String(), &tls.Config{RootCAs: ca.pool, ServerName: serverName, NextProtos: []string{"h2"}})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].Raw
	}
	if !bytes.Equal(handshake(), first.der) {
		t.Fatal("the server does not present the certificate it started with")
	}

	renewed := ca.issue(t, serverName)
	writeSecretVolume(t, dir, "..v2", map[string][]byte{"tls.crt": renewed.certPEM, "tls.key": renewed.keyPEM, "ca.crt": ca.pem})
	for deadline := time.Now().Add(5 * time.Second); !bytes.Equal(handshake(), renewed.der); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the server still presents the old certificate 5s after the files were renewed")
		}
	}
}
