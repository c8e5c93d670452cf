package proxy

import (
	"maps"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// UnknownResource stands in metrics for every resource no API server is known to serve: callers may put any name in
// a path, and each would be a series of its own for good.
const UnknownResource = "@unknown"

// OtherVerb stands in metrics for every verb the API server does not have and HTTP does not name: a request of no
// resource takes its verb from its method, whatever the caller made up.
const OtherVerb = "@other"

// knownVerbs are the verbs metrics name: the API server's, and the standard HTTP methods a request of no resource
// (discovery, /version, health) is named by, lowercased.
var knownVerbs = map[string]bool{
	"get": true, "list": true, "watch": true, "create": true, "update": true, "patch": true, "delete": true,
	"deletecollection": true, "proxy": true,
	"head": true, "post": true, "put": true, "options": true, "connect": true, "trace": true,
}

// verbLabel is req's verb in metrics: a known one, else OtherVerb.
func verbLabel(req *Request) string {
	if knownVerbs[req.Verb] {
		return req.Verb
	}
	return OtherVerb
}

// resourceLabels names resources in metrics ("resource" for the core group, "group/resource" for others) once an
// API server is known to serve them: listed in a discovery document the proxy read, or answered with success
// (servesResource; the proxy's own answers are all refusals, so such a code comes from an upstream). Any other is
// UnknownResource. It grows only with what the API servers serve, and is read on every request without a lock: the
// map is replaced, never changed.
type resourceLabels struct {
	known    atomic.Pointer[map[schema.GroupResource]string]
	learning sync.Mutex // serializes replacing known
}

func newResourceLabels() *resourceLabels {
	l := &resourceLabels{}
	l.known.Store(&map[schema.GroupResource]string{})
	return l
}

// of is req's resource label: "" for a request of no resource (discovery, /version, health).
func (l *resourceLabels) of(req *Request) string {
	label, _ := l.lookup(req)
	return label
}

// lookup is req's resource label, and whether it is settled: false for a resource not known yet.
func (l *resourceLabels) lookup(req *Request) (string, bool) {
	if !req.IsResourceRequest {
		return "", true
	}
	if label, ok := (*l.known.Load())[req.groupResource()]; ok {
		return label, true
	}
	return UnknownResource, false
}

// answered learns req's resource from the first code its caller is sent, and returns its label. Only a success of a
// verb the API server routes to a resource shows that it serves one: an upstream may answer a CORS preflight
// (OPTIONS, verb "") or redirect for any path, and the proxy's own answers are refusals.
func (l *resourceLabels) answered(req *Request, code int) string {
	label, known := l.lookup(req)
	if known || !servesResource(req.Verb, code) {
		return label
	}
	l.learn(req.APIGroup, []string{req.Resource})
	return resourceLabel(req)
}

// servesResource reports whether an answer of code to a request of verb shows that an API server serves its
// resource.
func servesResource(verb string, code int) bool {
	if code != http.StatusSwitchingProtocols && (code < 200 || code > 299) {
		return false
	}
	switch verb {
	case "get", "list", "watch", "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// learn records resources of group an API server serves; subresources ("pods/log") are named by their resource.
func (l *resourceLabels) learn(group string, resources []string) {
	if !l.lacks(group, resources) {
		return // discovery read again, for a resource it does not list: nothing new
	}
	l.learning.Lock()
	defer l.learning.Unlock()
	known := *l.known.Load()
	var next map[schema.GroupResource]string
	for _, r := range resources {
		gr := schema.GroupResource{Group: group, Resource: r}
		if _, ok := known[gr]; ok || strings.Contains(r, "/") {
			continue
		}
		if next == nil {
			next = maps.Clone(known)
		}
		next[gr] = groupResourceLabel(gr)
	}
	if next != nil {
		l.known.Store(&next)
	}
}

func (l *resourceLabels) lacks(group string, resources []string) bool {
	known := *l.known.Load()
	for _, r := range resources {
		if _, ok := known[schema.GroupResource{Group: group, Resource: r}]; !ok && !strings.Contains(r, "/") {
			return true
		}
	}
	return false
}

// learnDiscovered records the resources of a discovery document read (resource -> namespaced).
func (l *resourceLabels) learnDiscovered(group string, resources map[string]bool) {
	names := make([]string, 0, len(resources))
	for r := range resources {
		names = append(names, r)
	}
	l.learn(group, names)
}
