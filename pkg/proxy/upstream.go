package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"

	"github.com/fedmesh/fedmesh/pkg/breaker"
	"github.com/fedmesh/fedmesh/pkg/proxy/config"
)

// upstreamStreamWindow is how much of one response HTTP/2 buffers in the proxy before the caller has read it. x/net's
// default, 4 MiB per stream, made the proxy's memory grow with the size of the LISTs it passed to a reader slower
// than the API server; 1 MiB still keeps a link with 10 ms of round trip at 100 MB/s per stream.
const upstreamStreamWindow = 1 << 20

// upstream is one API server the proxy forwards to: the host, or a member cluster.
type upstream struct {
	name      string // "" for the host
	target    *url.URL
	host      string         // the address it was made from, as configured
	member    config.Cluster // what a member's upstream was made from (rebuildMembers keeps it while unchanged)
	transport http.RoundTripper
	forward   *httputil.ReverseProxy
}

// newUpstream prepares forwarding to the API server of cfg. Only cfg's address, CA and proxy are used: the proxy
// never adds its own identity, so the caller's Authorization header decides what the API server allows.
// connectHeader goes on each CONNECT to cfg's proxy. A response
// without a Content-Length (a watch, a list the API server streams) is flushed at every write, so events are
// relayed as they arrive; httputil.ReverseProxy does that by itself. A response of known length is not flushed
// write by write: that cost a small GET about 4% of its latency.
func newUpstream(name string, cfg *rest.Config, connectHeader http.Header) (*upstream, error) {
	target, err := url.Parse(cfg.Host)
	if err != nil || target.Host == "" {
		return nil, fmt.Errorf("upstream %q: %q is not a URL", name, cfg.Host)
	}
	anonymous := rest.AnonymousClientConfig(cfg)
	if anonymous.Proxy == nil {
		// client-go's transport cache never shares a transport made for a config with a Proxy function (a member's
		// own proxy is one too), so the window and CONNECT headers set below are this upstream's alone, set before
		// its first connection. The function is client-go's default one.
		anonymous.Proxy = http.ProxyFromEnvironment
	}
	transport, err := rest.TransportFor(anonymous)
	if err != nil {
		return nil, fmt.Errorf("upstream %q: %w", name, err)
	}
	t := innermostTransport(transport)
	if t != nil {
		h2 := http.HTTP2Config{}
		if t.HTTP2 != nil {
			h2 = *t.HTTP2
		}
		h2.MaxReceiveBufferPerStream = upstreamStreamWindow
		t.HTTP2 = &h2
	}
	if len(connectHeader) > 0 {
		if t == nil {
			// Better unreachable, saying why, than reaching the proxy without the headers it asks for.
			return nil, fmt.Errorf("upstream %q: its proxy's headers cannot be set on a %T", name, transport)
		}
		t.ProxyConnectHeader = connectHeader.Clone()
	}
	u := &upstream{name: name, target: target, host: cfg.Host, transport: transport}
	u.forward = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			// The target's path too: a member served under a prefix (https://host/k8s/clusters/c-1) is asked
			// under it, as discovery and the list probes ask it (target.JoinPath).
			r.SetURL(target)
			// Keep the caller's X-Forwarded-For out: the API server audits the caller, not the proxy's hop.
			r.Out.Header.Del("X-Forwarded-For")
		},
		Transport:    transport,
		ErrorHandler: upstreamError,
	}
	return u, nil
}

// newMemberUpstream prepares forwarding to member c, through its proxy if it has one.
func newMemberUpstream(c config.Cluster) (*upstream, error) {
	cfg := &rest.Config{Host: c.Server, TLSClientConfig: rest.TLSClientConfig{CAData: c.CAData}}
	proxyURL, err := c.Proxy() // validated by the store already
	if err != nil {
		return nil, fmt.Errorf("upstream %q: %w", c.Name, err)
	}
	if proxyURL != nil {
		cfg.Proxy = http.ProxyURL(proxyURL)
	}
	u, err := newUpstream(c.Name, cfg, c.ConnectHeader())
	if err != nil {
		return nil, err
	}
	u.member = c
	return u, nil
}

// innermostTransport is the *http.Transport under client-go's wrappers (its CA-rotating holder included), or nil.
// Going through the wrappers rather than building the transport here keeps what client-go does for TLS.
func innermostTransport(rt http.RoundTripper) *http.Transport {
	for rt != nil {
		switch t := rt.(type) {
		case *http.Transport:
			if t == http.DefaultTransport {
				return nil // shared by the whole process; never tuned for one upstream
			}
			return t
		case utilnet.RoundTripperWrapper:
			rt = t.WrappedRoundTripper()
		default:
			return nil
		}
	}
	return nil
}

// upstreamError answers a request the upstream could not take with a Status, as the API server would.
func upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(r.Context().Err(), context.DeadlineExceeded) {
		// Only a write's own deadline (boundWrite) ends a request so: the caller's leaving cancels it. The proxy
		// gave up, not the upstream: no failure for a breaker to count.
		breaker.Excuse(w)
		writeStatus(w, http.StatusGatewayTimeout, string(metav1.StatusReasonTimeout),
			"the write did not finish within the proxy's ownership lease and was cancelled (it may still have taken effect if the API server was storing it); read the object before retrying")
		return
	}
	if r.Context().Err() != nil {
		return // the caller left
	}
	writeStatus(w, http.StatusBadGateway, "ServiceUnavailable", fmt.Sprintf("the API server could not be reached: %v", err))
}

// NewUpstream returns a handler that forwards every request unchanged to the API server of cfg, with the
// caller's credentials only: the proxy's forwarding without its classification, ownership and traffic policy,
// which the benchmark runs as the cost of a hop alone.
func NewUpstream(cfg *rest.Config) (http.Handler, error) {
	u, err := newUpstream("", cfg, nil)
	if err != nil {
		return nil, err
	}
	return u.forward, nil
}
