package member

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"slices"

	"k8s.io/client-go/transport"
)

// proxyHeaderVersion stands for spec.proxyHeader in specVersion, so that a changed header makes a new client. A
// digest rather than the headers: their values may be secrets (a proxy's credentials), kept out of anything that
// might be printed.
func proxyHeaderVersion(spec map[string]string) string {
	if len(spec) == 0 {
		return ""
	}
	sum := sha256.New()
	for _, key := range slices.Sorted(maps.Keys(spec)) {
		fmt.Fprintf(sum, "%q=%q\n", key, spec[key])
	}
	return hex.EncodeToString(sum.Sum(nil))
}

// withProxyConnectHeader is a rest.Config wrapper that sends h on the CONNECT requests of the member's transport.
// rest.Config has no field for them, so they go on the *http.Transport client-go builds, before it is first used.
// Setting them there in place touches no other cluster's transport: client-go shares (caches) no transport built
// for a config with a Proxy func, which the member's config always has when it has proxy headers.
func withProxyConnectHeader(h http.Header) transport.WrapperFunc {
	return func(rt http.RoundTripper) http.RoundTripper {
		tr, ok := rt.(*http.Transport)
		if !ok {
			// Better to fail each request, saying why, than to reach the proxy without its headers.
			return failingRoundTripper{fmt.Errorf("spec.proxyHeader cannot be sent: the member's transport is a %T", rt)}
		}
		tr.ProxyConnectHeader = h.Clone()
		return tr
	}
}

type failingRoundTripper struct{ err error }

func (f failingRoundTripper) RoundTrip(*http.Request) (*http.Response, error) { return nil, f.err }
