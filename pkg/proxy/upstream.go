package proxy

import (
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
)

// upstream is one API server the proxy forwards to: the host, or a member cluster.
type upstream struct {
	name      string // "" for the host
	target    *url.URL
	transport http.RoundTripper
	forward   *httputil.ReverseProxy
}

// newUpstream prepares forwarding to the API server of cfg. Only cfg's address and CA are used: the proxy never
// adds its own identity, so the caller's Authorization header decides what the API server allows. A response
// without a Content-Length (a watch, a list the API server streams) is flushed at every write, so events are
// relayed as they arrive; httputil.ReverseProxy does that by itself. A response of known length is not flushed
// write by write: that cost a small GET about 4% of its latency.
func newUpstream(name string, cfg *rest.Config) (*upstream, error) {
	target, err := url.Parse(cfg.Host)
	if err != nil || target.Host == "" {
		return nil, fmt.Errorf("upstream %q: %q is not a URL", name, cfg.Host)
	}
	transport, err := upstreamTransport(rest.AnonymousClientConfig(cfg))
	if err != nil {
		return nil, fmt.Errorf("upstream %q: %w", name, err)
	}
	u := &upstream{name: name, target: target, transport: transport}
	u.forward = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL.Scheme, r.Out.URL.Host, r.Out.Host = target.Scheme, target.Host, target.Host
			// Keep the caller's X-Forwarded-For out: the API server audits the caller, not the proxy's hop.
			r.Out.Header.Del("X-Forwarded-For")
		},
		Transport:    transport,
		ErrorHandler: upstreamError,
	}
	return u, nil
}

// upstreamStreamBuffer is how much of one response the proxy takes in from its API server ahead of the operator
// reading it (Go's HTTP/2 client takes 4 MiB per stream by default). A LIST of a large shard fills it, and so would
// every watch of an operator that stalls; 1 MiB per stream still keeps a loopback or in-cluster hop at full speed.
const upstreamStreamBuffer = 1 << 20

// upstreamTransport is client-go's transport for cfg (HTTP/2 with its health checks, TLS from cfg) with the
// receive buffer per stream bounded by upstreamStreamBuffer.
func upstreamTransport(cfg *rest.Config) (http.RoundTripper, error) {
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, err
	}
	t := utilnet.SetTransportDefaults(&http.Transport{
		Proxy:               cfg.Proxy,
		DialContext:         cfg.Dial,
		TLSClientConfig:     tlsConfig,
		DisableCompression:  cfg.DisableCompression,
		MaxIdleConnsPerHost: 25, // client-go's
		HTTP2:               &http.HTTP2Config{MaxReceiveBufferPerStream: upstreamStreamBuffer},
	})
	return rest.HTTPWrappersForConfig(cfg, t)
}

// upstreamError answers a request the upstream could not take with a Status, as the API server would.
func upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		return // the caller left
	}
	writeStatus(w, http.StatusBadGateway, "ServiceUnavailable", fmt.Sprintf("the API server could not be reached: %v", err))
}

// NewUpstream returns a handler that forwards every request unchanged to the API server of cfg, with the
// caller's credentials only: the proxy's forwarding without its classification, ownership and traffic policy,
// which the benchmark runs as the cost of a hop alone.
func NewUpstream(cfg *rest.Config) (http.Handler, error) {
	u, err := newUpstream("", cfg)
	if err != nil {
		return nil, err
	}
	return u.forward, nil
}
