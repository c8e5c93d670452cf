package proxy

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// ClusterPrefix is the path prefix under which the proxy fronts member clusters: /clusters/<name>/api/v1/...
const ClusterPrefix = "/clusters/"

// Request is what the proxy decides on: which upstream a request goes to, and what the API server will take
// it to be (verb, resource, namespace, ...).
type Request struct {
	// Cluster is the member cluster of a /clusters/<name>/... request; empty means the API server the proxy
	// fronts directly.
	Cluster string
	// UpstreamPath is the path to send upstream, without the /clusters/<name> prefix.
	UpstreamPath string
	request.RequestInfo
}

var requestInfoFactory = &request.RequestInfoFactory{
	APIPrefixes:          sets.NewString("api", "apis"),
	GrouplessAPIPrefixes: sets.NewString("api"),
}

// Classify reads a request the way the API server will, with k8s.io/apiserver's RequestInfo, after taking off a
// /clusters/<name> prefix.
func Classify(r *http.Request) (Request, error) {
	out := Request{UpstreamPath: r.URL.Path}
	if rest, ok := strings.CutPrefix(r.URL.Path, ClusterPrefix); ok {
		name, path, _ := strings.Cut(rest, "/")
		if name == "" {
			return Request{}, fmt.Errorf("%s needs a cluster name: %s<name>/...", ClusterPrefix, ClusterPrefix)
		}
		out.Cluster, out.UpstreamPath = name, "/"+path
	}
	// RequestInfo reads only the method, path and query; give it the upstream path on a shallow copy.
	upstream := &http.Request{Method: r.Method, URL: &url.URL{Path: out.UpstreamPath, RawQuery: r.URL.RawQuery}}
	info, err := requestInfoFactory.NewRequestInfo(upstream)
	if err != nil {
		return Request{}, err
	}
	out.RequestInfo = *info
	return out, nil
}

// listPath is the path of a list of req's resource where req is: a watch on the legacy /watch/ path
// (/api/v1/watch/namespaces/x/pods) becomes /api/v1/namespaces/x/pods.
func (req *Request) listPath() string {
	parts := []string{"", req.APIPrefix}
	if req.APIGroup != "" {
		parts = append(parts, req.APIGroup)
	}
	parts = append(parts, req.APIVersion)
	if req.Namespace != "" {
		parts = append(parts, "namespaces", req.Namespace)
	}
	return strings.Join(append(parts, req.Resource), "/")
}
