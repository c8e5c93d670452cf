package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// scopes knows which resources are namespaced, per upstream, from the API server's discovery documents. A list
// of all pods and a list of all nodes look alike in a URL; only discovery tells them apart. The proxy has no
// identity of its own, so it reads discovery with the caller's credentials (discovery is readable by every
// authenticated user), once per group version and scopeBound. A CRD's scope cannot change, but a CRD can be deleted
// and created again with the other scope (an operator's upgrade): what discovery told is read again after the bound,
// and sooner once the API server answers a request in the other scope (answered). A reading that finds a resource
// in the other scope tells rescoped, so that the watches opened under the old one end.
type scopes struct {
	mu     sync.RWMutex // written only when discovery is read, or an answer contradicts it: every request reads
	known  map[scopeKey]*learnedScopes
	labels *resourceLabels // told of every resource discovery lists
	now    func() time.Time
	// rescoped, when set, is told the resources of a group on a cluster whose scope a reading found changed
	// (resource -> namespaced now), after what is learned is stored.
	rescoped func(cluster, group string, changed map[string]bool)
}

type scopeKey struct{ cluster, group, version string }

// learnedScopes is what discovery told of one group version.
type learnedScopes struct {
	namespaced map[string]bool // resource -> namespaced; replaced, never changed
	at         time.Time       // when discovery told it
	recheck    time.Time       // from when discovery is read again
	rechecking bool            // one caller reads it again; the others go on with what it told meanwhile
}

// scopeBound is how long what discovery told of a group version is trusted. A CRD recreated with the other scope is
// fenced and filtered by its new scope within it; every request pays a map look-up for it, one in scopeBound per
// group version a discovery request.
const scopeBound = time.Minute

// scopeRecheckMin is the least time between two readings of a group version's discovery, but for a resource it
// does not list yet: an API server whose answers disagree with its discovery (an aggregated one answering any path)
// costs a reading per scopeRecheckMin at most, and discovery that does not answer is asked again as often.
const scopeRecheckMin = time.Second

func newScopes(labels *resourceLabels) *scopes {
	return &scopes{known: map[scopeKey]*learnedScopes{}, labels: labels, now: time.Now}
}

// namespaced reports whether resource of group/version on u is namespaced.
func (s *scopes) namespaced(ctx context.Context, u *upstream, auth string, group, version, resource string) (bool, error) {
	key := scopeKey{u.name, group, version}
	now := s.now()
	s.mu.RLock()
	learned := s.known[key]
	namespaced, found := learned.lookup(resource)
	trusted := found && (now.Before(learned.recheck) || learned.rechecking)
	s.mu.RUnlock()
	if trusted {
		return namespaced, nil
	}
	s.mu.Lock()
	learned = s.known[key] // as it is now: another caller may have read discovery meanwhile
	namespaced, found = learned.lookup(resource)
	if found && (now.Before(learned.recheck) || learned.rechecking) {
		s.mu.Unlock()
		return namespaced, nil
	}
	if found {
		learned.rechecking = true
	}
	s.mu.Unlock()
	// Unknown group version, a resource that appeared since (a new CRD), or one known too long: read discovery again.
	resources, err := discover(ctx, u, auth, group, version)
	if err != nil {
		if !found {
			return false, err
		}
		// What discovery told last stands until it answers again: a scope known is better than a refusal.
		s.mu.Lock()
		learned.rechecking, learned.recheck = false, now.Add(scopeRecheckMin)
		s.mu.Unlock()
		return namespaced, nil
	}
	s.mu.Lock()
	changed := s.known[key].changedIn(resources)
	s.known[key] = &learnedScopes{namespaced: resources, at: now, recheck: now.Add(scopeBound)}
	s.mu.Unlock()
	s.labels.learnDiscovered(group, resources)
	if len(changed) > 0 && s.rescoped != nil {
		s.rescoped(u.name, group, changed)
	}
	namespaced, found = resources[resource]
	if !found {
		return false, &discoveryError{code: http.StatusNotFound,
			err: fmt.Errorf("the server could not find the requested resource: no %q in %s", resource, groupVersion(group, version))}
	}
	return namespaced, nil
}

func (l *learnedScopes) lookup(resource string) (namespaced, found bool) {
	if l == nil {
		return false, false
	}
	namespaced, found = l.namespaced[resource]
	return namespaced, found
}

// changedIn is what resources (resource -> namespaced, as discovery tells now) changes of what l told: the
// resources both list, in the other scope now.
func (l *learnedScopes) changedIn(resources map[string]bool) map[string]bool {
	var changed map[string]bool
	for r, namespaced := range resources {
		if told, found := l.lookup(r); found && told != namespaced {
			if changed == nil {
				changed = map[string]bool{}
			}
			changed[r] = namespaced
		}
	}
	return changed
}

// told is what discovery told last of resource's scope, without reading it again.
func (s *scopes) told(cluster, group, version, resource string) (namespaced, found bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.known[scopeKey{cluster, group, version}].lookup(resource)
}

// answered takes note that the API server served a request of resource in a scope (scopeShownBy): when discovery
// told the other, the resource's CRD was recreated since, and the next look-up reads discovery again.
func (s *scopes) answered(cluster, group, version, resource string, namespaced bool) {
	if told, found := s.told(cluster, group, version, resource); !found || told == namespaced {
		return // the answer agrees with discovery, as nearly every one does: no write lock
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	learned := s.known[scopeKey{cluster, group, version}]
	if told, found := learned.lookup(resource); !found || told == namespaced {
		return
	}
	if now := s.now(); !now.Before(learned.at.Add(scopeRecheckMin)) && now.Before(learned.recheck) {
		learned.recheck = now
	}
}

// scopeShownBy is the scope the API server's success at req shows its resource has, if it shows one: it serves a
// path in a namespace only for a namespaced resource, and one outside namespaces, but a list or watch across them,
// only for a cluster-scoped one.
func scopeShownBy(req *Request) (namespaced, shows bool) {
	switch {
	case !req.IsResourceRequest || req.APIGroup == "" && req.Resource == "namespaces":
		return false, false
	case req.Namespace != "":
		return true, true
	case req.Verb == "list" || req.Verb == "watch":
		return false, false
	}
	return false, true
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
