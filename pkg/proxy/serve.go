package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/breaker"
	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/pkg/proxy/filter"
	"github.com/fedmesh/fedmesh/pkg/shard"
)

// serve applies the shard's ownership to one classified request.
func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	rt := routedFrom(r)
	req, u := rt.req, rt.upstream
	if !req.IsResourceRequest {
		forward(u, w, r, req, nil) // discovery, OpenAPI, /version, health: the same for every shard
		return
	}
	write := writes(req)
	asked := r // discovery below is the proxy's own business, not bounded by the write's deadline
	if namespace, inPod := req.nodeProxyPod(); inPod {
		// Fenced in the pod's namespace, as the pod's own exec is; the API server is sent the request as it came.
		fenced := *req
		fenced.Namespace = namespace
		req = &fenced
	}
	// A write holds the gate until its answer, within a deadline inside the lease. Long-running requests (exec,
	// attach, port-forward, proxy, through a pod, a service or a node) may be fenced like writes but their
	// connections may stay open for hours: they neither hold up an ownership change nor get a deadline.
	leaseLeft := true
	if write && !req.longRunning() {
		p.writeGate.RLock()
		defer p.writeGate.RUnlock()
		bounded, cancel, ok := p.boundWrite(r)
		if ok {
			defer cancel()
			r = bounded
		}
		leaseLeft = ok
	}
	own := p.ownership() // read after taking the gate: a write never runs under revoked ranges
	if !leaseLeft {
		own = nil // the lease ends before a write could: as good as run out, the write is fenced
	}
	if own != nil {
		if rename, ok := leaseRenameFor(own, req); ok {
			ours, err := rename.request(r, req)
			if err != nil {
				refuse(w, http.StatusBadRequest, string(metav1.StatusReasonBadRequest), "%v", err)
				return
			}
			if ours {
				forward(u, w, r, req, rename.response)
				return
			}
			// A create of another Lease in that namespace: a write like any other.
		}
	}
	namespaced, err := p.isNamespaced(asked, u, req)
	if err != nil {
		code, reason := http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable
		if de := (*discoveryError)(nil); errors.As(err, &de) {
			code, reason = de.status()
		}
		refuse(w, code, string(reason), "%v", err)
		return
	}
	defer p.noteScope(rt, namespaced)
	inNamespace := namespaced && req.Namespace != "" // a write that names no namespace acts on no namespace (fence)
	switch {
	case write:
		if owner, allowed := fence(own, req, namespaced); !allowed {
			p.metrics.fenced.WithLabelValues(p.metrics.resources.of(req), clusterLabel(req.Cluster)).Inc()
			refuse(w, http.StatusForbidden, string(metav1.StatusReasonForbidden), "%s", fenceMessage(own, req, namespaced, owner))
			return
		}
		if inNamespace && !recordsEvent(req) && !p.relists.writable(own, req.Namespace, time.Now()) {
			p.metrics.fenced.WithLabelValues(p.metrics.resources.of(req), clusterLabel(req.Cluster)).Inc()
			breaker.WriteStatus(w, breaker.Decision{Code: http.StatusForbidden, Reason: string(metav1.StatusReasonForbidden),
				Message: relistingMessage(own, req), RetryAfter: relistingRetry})
			return
		}
		// Only an object's create or update (PUT) carries an object to label: a subresource's (an eviction, a
		// status, a pod's exec or proxy) carries something else, or a payload that is not the API server's. Updates
		// too, as the label webhook does: a controller that sets an object's labels whole would take the label off,
		// and the object would drop out of the shard's view. A patch says only what changes, and is left to the
		// webhook and the backfill.
		if stamped(req.Verb) && req.Subresource == "" && inNamespace && own.FilterMode == meshv1alpha1.FilterModeLabel && own.Sharded(req.groupResource()) {
			if err := stampLabels(r, req.Namespace); err != nil {
				refuse(w, http.StatusBadRequest, string(metav1.StatusReasonBadRequest), "%v", err)
				return
			}
		}
		forward(u, w, r, req, nil)
	case req.Verb == "list" || req.Verb == "watch":
		p.listWatch(w, r, req, u, own, namespaced)
	default:
		forward(u, w, r, req, nil) // reads of single objects pass: the fence guards writes
	}
}

// connects reports whether req opens a connection into a pod (exec, attach, port-forward, its proxy) or through a
// service's proxy: whatever the verb (a WebSocket exec is a GET), it acts in that namespace, and is fenced like a
// write. Those through a node's proxy are writes' business: the node's path says whether they go into a pod.
func (req *Request) connects() bool {
	if req.APIGroup != "" {
		return false
	}
	switch req.Resource {
	case "pods":
		return req.Subresource == "exec" || req.Subresource == "attach" || req.Subresource == "portforward" || req.Subresource == "proxy"
	case "services":
		return req.Subresource == "proxy"
	}
	return false
}

// writes reports whether req is fenced as a write: it changes objects (reviews aside, which store nothing), or
// acts in a namespace (connects). Through a node's proxy, a request into a pod acts in its namespace whatever the
// verb; one to the node itself (its metrics, stats, profiles) or a container's logs is read with a GET and changes
// the node otherwise.
func writes(req *Request) bool {
	if req.proxiesToNode() {
		_, inPod := req.nodeProxyPod()
		return inPod || req.Verb != "get"
	}
	return (isWrite(req.Verb) && !reviews(req)) || req.connects()
}

// reviews reports whether req asks the API server to review a token or an access: a create that is answered and
// stored nowhere, so a read, on every shard (controller-runtime's authenticated metrics endpoint sends them on every
// scrape). Named one by one: a resource that is only ever created is not a read for that (a pod's binding).
func reviews(req *Request) bool {
	if req.Verb != "create" || req.Subresource != "" {
		return false
	}
	switch req.APIGroup {
	case "authentication.k8s.io":
		return req.Resource == "tokenreviews" || req.Resource == "selfsubjectreviews"
	case "authorization.k8s.io":
		switch req.Resource {
		case "subjectaccessreviews", "selfsubjectaccessreviews", "selfsubjectrulesreviews", "localsubjectaccessreviews":
			return true
		}
	}
	return false
}

func isWrite(verb string) bool {
	switch verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// noteScope tells the scopes what the API server's answer to rt showed of its resource's scope, when it contradicts
// what the request was served under (namespaced): a request in a namespace always is, so the scopes look it up.
func (p *Proxy) noteScope(rt routed, namespaced bool) {
	code := rt.recorder.status
	if code != http.StatusSwitchingProtocols && (code < 200 || code > 299) {
		return // refused, or not answered: it shows nothing
	}
	req := rt.req // as the API server took it: a node's proxy into a pod is a request of the node
	shown, shows := scopeShownBy(req)
	if !shows || (!shown && !namespaced) {
		return
	}
	p.scopes.answered(req.Cluster, req.APIGroup, req.APIVersion, req.Resource, shown)
}

// isNamespaced tells namespaced resources from cluster-scoped ones. Namespace objects are cluster-scoped even
// though their requests carry the namespace's name.
func (p *Proxy) isNamespaced(r *http.Request, u *upstream, req *Request) (bool, error) {
	if req.APIGroup == "" && req.Resource == "namespaces" {
		return false, nil
	}
	if req.Namespace != "" {
		return true, nil
	}
	return p.scopes.namespaced(r.Context(), u, r.Header.Get("Authorization"), req.APIGroup, req.APIVersion, req.Resource)
}

// fence decides whether this shard may write what req touches, and names the owner when it may not. Without an
// ownership the proxy owns nothing.
func fence(own *config.Ownership, req *Request, namespaced bool) (owner shard.ShardID, allowed bool) {
	switch {
	case own == nil:
		return shard.NoShard, false
	case recordsEvent(req):
		return own.Shard, true
	case !namespaced || req.Namespace == "":
		// A write that names no namespace acts on a cluster-scoped object, or on nothing: the API server serves no
		// write of a namespaced resource across namespaces. A resource learned namespaced whose CRD was recreated
		// cluster-scoped is written so; "" is no shard's namespace.
		return own.ClusterScopedShard, own.SeesClusterScoped()
	case own.Owned().ContainsNamespace(req.Namespace):
		return own.Shard, true
	}
	owner, found := own.Assignment.NamespaceOwner(req.Namespace)
	if !found {
		owner = shard.NoShard
	}
	return owner, false
}

// recordsEvent reports whether req records an Event (creates it, or counts a repeat of it). Events are reports,
// not objects an operator owns: every shard may report what it saw, also in a namespace another shard owns (its
// own leader election, say, in the namespace of the Lease), and two shards' events never compete. Deleting them
// stays fenced.
func recordsEvent(req *Request) bool {
	return req.Resource == "events" && (req.APIGroup == "" || req.APIGroup == "events.k8s.io") &&
		(req.Verb == "create" || req.Verb == "update" || req.Verb == "patch")
}

func fenceMessage(own *config.Ownership, req *Request, namespaced bool, owner shard.ShardID) string {
	what := fmt.Sprintf("%s %s", req.Verb, resourceLabel(req))
	switch {
	case own == nil:
		return fmt.Sprintf("%s refused: this proxy owns nothing (no shard configuration yet, or out of contact with the manager past its ownership lease)", what)
	case !namespaced || req.Namespace == "":
		return fmt.Sprintf("%s refused: cluster-scoped objects (and writes naming no namespace) belong to shard %d, and this is shard %d", what, owner, own.Shard)
	case owner == shard.NoShard:
		return fmt.Sprintf("%s refused: namespace %q is being handed over between shards (this is shard %d); retry shortly", what, req.Namespace, own.Shard)
	}
	return fmt.Sprintf("%s refused: namespace %q belongs to shard %d, and this is shard %d", what, req.Namespace, owner, own.Shard)
}

// relistingRetry is when to retry a write refused while the shard relists a granted namespace: a reflector relists
// within a second or two of its watch's end.
const relistingRetry = time.Second

func relistingMessage(own *config.Ownership, req *Request) string {
	return fmt.Sprintf("%s %s refused: namespace %q was just granted to shard %d, which is still relisting it (its informers fetch its objects afresh); retry shortly",
		req.Verb, resourceLabel(req), req.Namespace, own.Shard)
}

// stamped reports whether a write of verb carries a whole object, whose labels label mode stamps.
func stamped(verb string) bool { return verb == "create" || verb == "update" }

// stampLabels adds the shard-bucket label to the object of a create or update, so label-mode lists select it.
func stampLabels(r *http.Request, namespace string) error {
	if r.Body == nil {
		return nil
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	contentType := r.Header.Get("Content-Type")
	if media, _, _ := mime.ParseMediaType(contentType); media == "application/yaml" {
		// The API server takes YAML, and JSON as well: the label is stamped on the object's JSON.
		// A duplicate key is refused as the API server refuses it with fieldValidation=Strict, and otherwise
		// taken last as it takes it.
		toJSON := yaml.YAMLToJSON
		if r.URL.Query().Get("fieldValidation") == "Strict" {
			toJSON = yaml.YAMLToJSONStrict
		}
		if body, err = toJSON(body); err != nil {
			return fmt.Errorf("stamp shard label: %w", err)
		}
		contentType = "application/json"
		r.Header.Set("Content-Type", contentType)
	}
	out, err := filter.StampCreate(body, contentType, namespace)
	if err != nil {
		return fmt.Errorf("stamp shard label: %w", err)
	}
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(out)), int64(len(out))
	r.Header.Set("Content-Length", strconv.Itoa(len(out)))
	return nil
}
