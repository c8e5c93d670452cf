package proxy

import (
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"

	"k8s.io/client-go/rest"
)

// NewUpstream returns a handler that forwards every request to the API server of cfg. Only cfg's address and
// CA are used: the proxy never adds its own identity, so the caller's Authorization header decides what the
// API server allows. Responses stream without buffering, so watches are relayed as events arrive.
func NewUpstream(cfg *rest.Config) (http.Handler, error) {
	target, err := url.Parse(cfg.Host)
	if err != nil || target.Host == "" {
		return nil, fmt.Errorf("upstream %q is not a URL", cfg.Host)
	}
	transport, err := rest.TransportFor(rest.AnonymousClientConfig(cfg))
	if err != nil {
		return nil, fmt.Errorf("upstream transport: %w", err)
	}
	return &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
		},
		Transport:     transport,
		FlushInterval: -1,
	}, nil
}
