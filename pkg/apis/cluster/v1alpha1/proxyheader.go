package v1alpha1

import (
	"maps"
	"net/http"
	"net/textproto"
	"slices"
	"strings"
)

// ProxyConnectHeader is a spec.proxyHeader as the headers of the CONNECT request that opens each connection through
// spec.proxyURL; nil when there are none. As in Karmada, a value with commas is several values of its header. Keys
// are canonicalized ("x-proxy-token" is X-Proxy-Token), and keys that differ only in case add up in the order of
// their spelling, so the result does not depend on map order. The federator and the mesh proxies both send these.
func ProxyConnectHeader(proxyHeader map[string]string) http.Header {
	if len(proxyHeader) == 0 {
		return nil
	}
	h := http.Header{}
	for _, key := range slices.Sorted(maps.Keys(proxyHeader)) {
		canonical := textproto.CanonicalMIMEHeaderKey(key)
		for _, v := range strings.Split(proxyHeader[key], ",") {
			h[canonical] = append(h[canonical], strings.TrimSpace(v))
		}
	}
	return h
}
