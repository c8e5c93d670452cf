package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// scopes knows which resources are namespaced, per upstream, from the API server's discovery documents. A list
// of all pods and a list of all nodes look alike in a URL; only discovery tells them apart. The proxy has no
// identity of its own, so it reads discovery with the caller's credentials (discovery is readable by every
// authenticated user), once per group version.
type scopes struct {
	mu     sync.Mutex
	known  map[scopeKey]map[string]bool // resource -> namespaced
	labels *resourceLabels              // told of every resource discovery lists
}

type scopeKey struct{ cluster, group, version string }

func newScopes(labels *resourceLabels) *scopes {
	return &scopes{known: map[scopeKey]map[string]bool{}, labels: labels}
}

// namespaced reports whether resource of group/version on u is namespaced.
func (s *scopes) namespaced(ctx context.Context, u *upstream, auth string, group, version, resource string) (bool, error) {
	key := scopeKey{u.name, group, version}
	s.mu.Lock()
	resources, ok := s.known[key]
	s.mu.Unlock()
	if namespaced, found := resources[resource]; ok && found {
		return namespaced, nil
	}
	// Unknown group version, or a resource that appeared since (a new CRD): read discovery again.
	resources, err := discover(ctx, u, auth, group, version)
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	s.known[key] = resources
	s.mu.Unlock()
	s.labels.learnDiscovered(group, resources)
	namespaced, found := resources[resource]
	if !found {
		return false, &discoveryError{code: http.StatusNotFound,
			err: fmt.Errorf("the server could not find the requested resource: no %q in %s", resource, groupVersion(group, version))}
	}
	return namespaced, nil
}

// discoveryError is discovery's answer when it was not a list of resources: the request is answered with its code
// (404 for a group version or resource the server does not have, 401 or 403 for the caller's credentials), as the
// API server would answer the request itself; an upstream that could not answer makes it 503.
type discoveryError struct {
	code int
	err  error
}

func (e *discoveryError) Error() string { return e.err.Error() }
func (e *discoveryError) Unwrap() error { return e.err }

// status is the code and reason to answer with.
func (e *discoveryError) status() (int, metav1.StatusReason) {
	switch e.code {
	case http.StatusNotFound:
		return e.code, metav1.StatusReasonNotFound
	case http.StatusUnauthorized:
		return e.code, metav1.StatusReasonUnauthorized
	case http.StatusForbidden:
		return e.code, metav1.StatusReasonForbidden
	}
	return http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable
}

// forget drops what is known of an upstream, e.g. when its configuration changes.
func (s *scopes) forget(cluster string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.known {
		if k.cluster == cluster {
			delete(s.known, k)
		}
	}
}

func groupVersion(group, version string) string {
	if group == "" {
		return version
	}
	return group + "/" + version
}

func discover(ctx context.Context, u *upstream, auth, group, version string) (map[string]bool, error) {
	path := "/apis/" + group + "/" + version
	if group == "" {
		path = "/api/" + version
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.target.JoinPath(path).String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := u.transport.RoundTrip(req)
	if err != nil {
		return nil, fmt.Errorf("discovery of %s: %w", groupVersion(group, version), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("discovery of %s: %w", groupVersion(group, version), err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &discoveryError{code: resp.StatusCode, err: fmt.Errorf("discovery of %s: %s", groupVersion(group, version), resp.Status)}
	}
	var list metav1.APIResourceList
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("discovery of %s: %w", groupVersion(group, version), err)
	}
	out := make(map[string]bool, len(list.APIResources))
	for _, r := range list.APIResources {
		out[r.Name] = r.Namespaced // subresources ("pods/log") are listed too; requests use the parent's name
	}
	return out, nil
}
