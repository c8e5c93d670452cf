package cluster

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sync"

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

// FreePort returns a loopback port that is free now, for a process about to listen on it. It is not one the kernel
// hands out itself (that range, 32768-60999 on Linux, is where outgoing connections get their local ports, and one
// of them could take the port before the process binds it): ports are tried from a random point of 20000-32767,
// each once per process.
func FreePort() (int, error) {
	portMu.Lock()
	defer portMu.Unlock()
	if nextPort == 0 {
		nextPort = portLow + mrand.IntN(portHigh-portLow)
	}
	for range portHigh - portLow {
		p := nextPort
		if nextPort++; nextPort >= portHigh {
			nextPort = portLow
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		l.Close()
		return p, nil
	}
	return 0, fmt.Errorf("no free port in %d-%d", portLow, portHigh-1)
}

const portLow, portHigh = 20000, 32768

var (
	portMu   sync.Mutex
	nextPort int
)
