package cluster

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
)

// egressGuard keeps kube-apiserver's traffic to "the cluster" on loopback. The API server dials webhooks behind a
// Service at the Service's cluster IP, and pods and nodes at their IPs; here those are addresses in
// --service-cluster-ip-range and kwok's CIDR, which no one serves and which the default route would send off the
// machine. kube-apiserver is told (--egress-selector-config-file) to make every such connection through this
// HTTP CONNECT proxy on a Unix socket, which connects only to loopback addresses and refuses everything else.
type egressGuard struct {
	ln      net.Listener
	config  string // the EgressSelectorConfiguration file
	mu      sync.Mutex
	refused []string // the addresses it refused, for the cluster's log
}

// startEgressGuard listens on dir/egress.sock and writes the API server's egress configuration beside it.
func startEgressGuard(dir string) (*egressGuard, error) {
	sock := filepath.Join(dir, "egress.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return nil, fmt.Errorf("egress guard: %w", err)
	}
	g := &egressGuard{ln: ln, config: filepath.Join(dir, "egress-selector.yaml")}
	cfg := fmt.Sprintf(`apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
- name: cluster
  connection:
    proxyProtocol: HTTPConnect
    transport:
      uds:
        udsName: %s
`, sock)
	if err := os.WriteFile(g.config, []byte(cfg), 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	go g.serve()
	return g, nil
}

func (g *egressGuard) serve() {
	for {
		conn, err := g.ln.Accept()
		if err != nil {
			return // closed
		}
		go g.handle(conn)
	}
}

// handle answers one CONNECT: it splices the connection to a loopback address, or refuses with 403.
func (g *egressGuard) handle(conn net.Conn) {
	br := bufio.NewReader(conn)
	req, err := http.ReadRequest(br)
	if err != nil {
		conn.Close()
		return
	}
	target := req.Host
	if req.Method != http.MethodConnect || !loopback(target) {
		g.mu.Lock()
		g.refused = append(g.refused, req.Method+" "+target)
		g.mu.Unlock()
		fmt.Fprintf(conn, "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
		conn.Close()
		return
	}
	upstream, err := net.Dial("tcp", target)
	if err != nil {
		fmt.Fprintf(conn, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
		conn.Close()
		return
	}
	fmt.Fprintf(conn, "HTTP/1.1 200 Connection established\r\n\r\n")
	go func() {
		_, _ = io.Copy(upstream, br) // what the client sent after the CONNECT may already be buffered
		upstream.Close()
	}()
	_, _ = io.Copy(conn, upstream)
	conn.Close()
}

// loopback reports whether hostPort is an IP literal on loopback: names are refused, since resolving one could
// lead anywhere.
func loopback(hostPort string) bool {
	host, _, err := net.SplitHostPort(hostPort)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Refused lists what the guard refused so far.
func (g *egressGuard) Refused() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.refused...)
}

func (g *egressGuard) stop() { g.ln.Close() }
