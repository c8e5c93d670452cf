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
	tlsCfg, err := TLSConfigFromCA(caFile, "xds.fedmesh.test")
	if err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("tok-a"), 0o600); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	c, err := NewClient(ClientOptions{Target: lis.Addr().String(), TLS: tlsCfg, TokenFile: tokenFile, Node: node,
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
