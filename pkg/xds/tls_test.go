package xds

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// TestTLSOnLoopback runs the real transport: TLS on a 127.0.0.1 listener, the client trusting only the CA file.
func TestTLSOnLoopback(t *testing.T) {
	caFile, serverCert := selfSigned(t, "xds.fedmesh.test")
	snap := NewSnapshotter(SnapshotterOptions{})
	cb := NewCallbacks(fakeAuth(tokens))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{serverCert}})))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	RegisterADS(ctx, g, snap, cb)
	go func() { _ = g.Serve(lis) }()
	defer g.Stop()

	node := meta("proxy-a", 0)
	if err := snap.Set(OwnershipType, node.ResourceName(), []byte(`{}`), "e1"); err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("tok-a"), 0o600); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	c, err := NewClient(ClientOptions{Target: lis.Addr().String(), CAFile: caFile, ServerName: "xds.fedmesh.test", TokenFile: tokenFile, Node: node,
		Apply: rec.apply, MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	cctx, ccancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Run(cctx) }()
	defer func() { ccancel(); <-done }()

	deadline := time.After(waitLimit)
	for {
		ch := cb.Changed()
		if acked(node, OwnershipType, "e1")(cb.Acks()) {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("no ACK over TLS: %+v", cb.Acks())
		}
	}
}

// selfSigned writes a self-signed certificate for dnsName to a CA file and returns it with its key pair.
func selfSigned(t *testing.T, dnsName string) (string, tls.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: dnsName}, DNSNames: []string{dnsName},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return caFile, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestClientFollowsARenewedCA: the manager's xDS CA is renewed (cert-manager gives a CA a new key) and the CA file
// the proxy was started with now holds the new CA; the manager then restarts with a certificate of the new CA. The
// client reads the CA file at every connect, so it reaches the new manager.
func TestClientFollowsARenewedCA(t *testing.T) {
	const host = "xds.fedmesh.test"
	oldCA, oldCert := selfSigned(t, host)
	caFile := filepath.Join(t.TempDir(), "xds-ca.crt")
	b, _ := os.ReadFile(oldCA)
	if err := os.WriteFile(caFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	serve := func(l net.Listener, cert tls.Certificate, version string) (*Callbacks, *grpc.Server) {
		snap := NewSnapshotter(SnapshotterOptions{VersionPrefix: version + "-"})
		cb := NewCallbacks(fakeAuth(tokens))
		g := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}})))
		RegisterADS(context.Background(), g, snap, cb)
		if err := snap.Set(OwnershipType, meta("proxy-a", 0).ResourceName(), []byte(`{}`), version); err != nil {
			t.Fatal(err)
		}
		go func() { _ = g.Serve(l) }()
		return cb, g
	}
	cb1, g1 := serve(lis, oldCert, "e1")

	node := meta("proxy-a", 0)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("tok-a"), 0o600); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	c, err := NewClient(ClientOptions{Target: addr, CAFile: caFile, ServerName: host, TokenFile: tokenFile, Node: node,
		Apply: rec.apply, MinBackoff: 200 * time.Millisecond, MaxBackoff: 1000 * time.Millisecond, Log: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	cctx, ccancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Run(cctx) }()
	defer func() { ccancel(); <-done }()
	waitAck := func(cb *Callbacks, v string) bool {
		deadline := time.After(waitLimit)
		for {
			ch := cb.Changed()
			if acked(node, OwnershipType, v)(cb.Acks()) {
				return true
			}
			select {
			case <-ch:
			case <-deadline:
				return false
			}
		}
	}
	if !waitAck(cb1, "e1") {
		t.Fatalf("no first ACK")
	}

	// CA renewed: the proxy's CA file now holds the new CA (a mounted Secret/ConfigMap after the kubelet's sync).
	newCA, newCert := selfSigned(t, host)
	b, _ = os.ReadFile(newCA)
	if err := os.WriteFile(caFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	// The manager restarts (rollout, failover) serving a certificate of the new CA.
	g1.Stop()
	lis2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	cb2, g2 := serve(lis2, newCert, "e2")
	defer g2.Stop()
	if !waitAck(cb2, "e2") {
		t.Fatalf("proxy never reached the manager after the CA renewal (its CA file holds the new CA): %+v", cb2.Acks())
	}
}
