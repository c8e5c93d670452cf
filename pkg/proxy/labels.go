package proxy

import (
	"maps"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// UnknownResource stands in metrics for every resource no API server is known to serve: callers may put any name in
// a path, and each would be a series of its own for good.
const UnknownResource = "@unknown"

// resourceLabels names resources in metrics ("resource" for the core group, "group/resource" for others) once an
// API server is known to serve them: listed in a discovery document the proxy read, or answered with a code below
// 400 (the proxy's own answers are all refusals, so such a code comes from an upstream). Any other is
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

// answered learns req's resource from the first code its caller is sent, and returns its label.
func (l *resourceLabels) answered(req *Request, code int) string {
	label, known := l.lookup(req)
	if known || code >= 400 {
		return label
	}
	l.learn(req.APIGroup, []string{req.Resource})
	return resourceLabel(req)
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
