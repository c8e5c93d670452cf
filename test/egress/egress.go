// Package egress is a loopback CONNECT proxy for tests of clients that reach an API server through an egress
// proxy (a Cluster's proxyURL and proxyHeader): it tunnels only a CONNECT carrying the token it wants, and records
// what it was sent.
package egress

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// TokenHeader is the header the proxy wants token in.
const TokenHeader = "X-Proxy-Token"

// Request is what the proxy was sent.
type Request struct {
	Method string
	Host   string
	Header http.Header
}

// Proxy is a CONNECT proxy on loopback, at URL.
type Proxy struct {
	URL   string
	token string
	mu    sync.Mutex
	seen  []Request
}

// Start serves a proxy that tunnels only a CONNECT whose TokenHeader is token, until t ends.
func Start(t testing.TB, token string) *Proxy {
	p := &Proxy{token: token}
	s := httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(s.Close)
	p.URL = s.URL
	return p
}

// Requests are the requests the proxy was sent, in order.
func (p *Proxy) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Request(nil), p.seen...)
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.seen = append(p.seen, Request{Method: r.Method, Host: r.Host, Header: r.Header.Clone()})
	p.mu.Unlock()
	if r.Method != http.MethodConnect || r.Header.Get(TokenHeader) != p.token {
		http.Error(w, "proxy auth required", http.StatusProxyAuthRequired)
		return
	}
	upstream, err := net.Dial("tcp", r.Host)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	w.WriteHeader(http.StatusOK)
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		upstream.Close()
		return
	}
	go func() { _, _ = io.Copy(upstream, conn); upstream.Close() }()
	_, _ = io.Copy(conn, upstream)
	conn.Close()
}
