package config

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
)

// Cluster is a member API server the proxy fronts; callers' credentials are passed to it unchanged. The proxy always
// verifies the server's certificate: a member that skips verification is not sent to it (the manager leaves it out).
type Cluster struct {
	Name string `json:"name"`
	// Server is the API server's https URL.
	Server string `json:"server"`
	// CAData verifies the server's certificate (PEM).
	CAData []byte `json:"caData,omitempty"`
	// ProxyURL is the http, https or socks5 proxy the member is reached through (the Cluster's spec.proxyURL);
	// empty means the proxy's environment (HTTPS_PROXY, NO_PROXY), as for the host.
	ProxyURL string `json:"proxyURL,omitempty"`
	// ProxyHeader are the headers sent to an http(s) ProxyURL on each CONNECT (the Cluster's spec.proxyHeader;
	// several values of one header comma-separated); a socks5 proxy gets none. Their values may be secrets (the
	// egress proxy's credentials): they travel in the ownership document over xDS to the sidecar, and are persisted
	// with it, so the manager sends them only to the federator's proxies (those of fedmesh-system), never a tenant
	// operator's; the proxy never logs them, and its errors name only the header.
	ProxyHeader map[string]string `json:"proxyHeader,omitempty"`
}

// Proxy is c's ProxyURL parsed; nil when it has none.
func (c Cluster) Proxy() (*url.URL, error) {
	if c.ProxyURL == "" {
		return nil, nil
	}
	u, err := url.Parse(c.ProxyURL)
	if err != nil {
		// Not url.Parse's error: it quotes the URL, whose user info may be a password.
		return nil, fmt.Errorf("proxyURL: not a URL")
	}
	switch u.Scheme {
	case "http", "https", "socks5":
	default:
		return nil, fmt.Errorf("proxyURL %q: must be an http, https or socks5 URL", u.Redacted())
	}
	if u.Host == "" {
		return nil, fmt.Errorf("proxyURL %q: has no host", u.Redacted())
	}
	return u, nil
}

// ConnectHeader is c's ProxyHeader as the headers of a CONNECT request, as the federator sends them when it
// reaches the member itself.
func (c Cluster) ConnectHeader() http.Header {
	return clusterv1alpha1.ProxyConnectHeader(c.ProxyHeader)
}

// Same reports whether c and o are the same API server reached the same way.
func (c Cluster) Same(o Cluster) bool {
	return c.Name == o.Name && c.Server == o.Server && string(c.CAData) == string(o.CAData) &&
		c.ProxyURL == o.ProxyURL && maps.Equal(c.ProxyHeader, o.ProxyHeader)
}

// validate reports c's problems, each prefixed by field. No message quotes a header value.
func (c Cluster) validate(field string) []error {
	var errs []error
	if u, err := url.Parse(c.Server); err != nil || u.Scheme != "https" || u.Host == "" {
		errs = append(errs, fmt.Errorf("%s.server %q: must be an https URL", field, c.Server))
	}
	if _, err := c.Proxy(); err != nil {
		errs = append(errs, fmt.Errorf("%s.%w", field, err))
	}
	if len(c.ProxyHeader) > 0 && c.ProxyURL == "" {
		errs = append(errs, fmt.Errorf("%s.proxyHeader: without a proxyURL there is no proxy to send it to", field))
	}
	for _, key := range slices.Sorted(maps.Keys(c.ProxyHeader)) {
		for _, msg := range validation.IsHTTPHeaderName(key) {
			errs = append(errs, fmt.Errorf("%s.proxyHeader %q: %s", field, key, msg))
		}
		// Go's transport would refuse such a value on every request; better said once, here.
		if strings.ContainsFunc(c.ProxyHeader[key], func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
			errs = append(errs, fmt.Errorf("%s.proxyHeader %q: its value has control characters", field, key))
		}
	}
	return errs
}
