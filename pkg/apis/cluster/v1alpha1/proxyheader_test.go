package v1alpha1

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestProxyConnectHeader(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec map[string]string
		want http.Header
	}{
		{name: "none", spec: nil, want: nil},
		{name: "one value", spec: map[string]string{"X-Proxy-Token": "s3cret"}, want: http.Header{"X-Proxy-Token": {"s3cret"}}},
		{
			name: "commas separate values, as in Karmada",
			spec: map[string]string{"X-Route": "a,b, c"},
			want: http.Header{"X-Route": {"a", "b", "c"}},
		},
		{
			name: "keys are canonical; spellings of one key add up in a fixed order",
			spec: map[string]string{"proxy-authorization": "Basic x", "x-route": "b", "X-ROUTE": "a"},
			want: http.Header{"Proxy-Authorization": {"Basic x"}, "X-Route": {"a", "b"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ProxyConnectHeader(tc.spec)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
