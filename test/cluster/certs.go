package cluster

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// credentials are the files kube-apiserver needs for TLS, service-account tokens and the admin identity.
type credentials struct {
	servingCert, servingKey string // TLS for 127.0.0.1 and localhost
	caPEM                   []byte // verifies servingCert
	saKey                   string // signs and verifies service-account tokens
	tokenFile               string // static token file with the admin token
	adminToken              string
}

func writeCredentials(dir string) (*credentials, error) {
	c := &credentials{
		servingCert: filepath.Join(dir, "apiserver.crt"),
		servingKey:  filepath.Join(dir, "apiserver.key"),
		saKey:       filepath.Join(dir, "sa.key"),
		tokenFile:   filepath.Join(dir, "tokens.csv"),
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")},
		[]string{"localhost"})
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	// The generated chain holds the serving certificate and the CA that signed it; clients trust the chain.
	c.caPEM = certPEM
	sa, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	saPEM, err := keyutil.MarshalPrivateKeyToPEM(sa)
	if err != nil {
		return nil, err
	}
	token := make([]byte, 16)
	if _, err := rand.Read(token); err != nil {
		return nil, err
	}
	c.adminToken = hex.EncodeToString(token)
	for path, data := range map[string][]byte{
		c.servingCert: certPEM,
		c.servingKey:  keyPEM,
		c.saKey:       saPEM,
		c.tokenFile:   []byte(c.adminToken + ",admin,admin,system:masters\n"),
	} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, err
		}
	}
	return c, nil
}
