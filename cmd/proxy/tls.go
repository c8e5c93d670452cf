package main

import (
	"crypto/tls"
	"fmt"
	"net"

	certutil "k8s.io/client-go/util/cert"
)

// selfSignedTLS is a TLS configuration with a certificate for the loopback addresses, made at start and kept in
// memory only. It is for clients in the same pod that skip verification (the injected kubeconfig): client-go sends
// a kubeconfig's credentials only over TLS, so a plain-HTTP proxy would receive every request anonymous.
func selfSignedTLS() (*tls.Config, error) {
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("localhost",
		[]net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, []string{"localhost"})
	if err != nil {
		return nil, fmt.Errorf("self-signed certificate: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}
