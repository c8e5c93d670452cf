package xds

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"github.com/go-logr/logr"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	ktypes "k8s.io/apimachinery/pkg/types"
)

// Authenticator decides whether the bearer token of a stream may speak as node (whose metadata ParseNode has already
// checked). The manager's implementation is a TokenReview that also checks the token's pod is the node's pod, and
// tells the pod's UID (SetPodUID) where the token names it.
type Authenticator func(ctx context.Context, token string, node *core.Node) error

// AckState is what one node has done with one resource.
type AckState struct {
	// Acked is the document version the node last ACKed, or the one its latest NACK says it keeps serving (one
	// acknowledged before this server knew the node); "" until it ACKs one.
	Acked string
	// Nacked and Error are the document version and error_detail message of the node's latest NACK, kept until it
	// ACKs a later response.
	Nacked string
	Error  string
	// Conflict: the latest NACK refused a valid document that cannot follow what the node holds (Acked), such as
	// an older ownership epoch; see Conflict.
	Conflict bool
}

// NodeState is one node as the server sees it.
type NodeState struct {
	Metadata NodeMetadata
	// PodUID is the UID of the pod its token is bound to, as the Authenticator told it (SetPodUID); "" if it did
	// not. The record is keyed by NodeKey(Metadata.NodeID(), PodUID).
	PodUID ktypes.UID
	// Connected: the node has an open, authenticated stream.
	Connected bool
	// Since is when Connected last changed.
	Since time.Time
	// Resources it subscribed to, and what it did with them.
	Resources map[ResourceKey]AckState
}

// Callbacks implements go-control-plane's server callbacks: it authenticates each stream and records what each node
// ACKs and NACKs. Only state-of-the-world streams are served; delta and REST requests are refused.
//
// Authentication: OnStreamOpen refuses a stream without "authorization: Bearer <token>" metadata; the node is only
// known from the first request, so OnStreamRequest calls the Authenticator then (and again if the node changes),
// before anything is sent. A nil Authenticator refuses every stream. A node may subscribe only to its own group's
// resource name, never to a wildcard.
type Callbacks struct {
	authenticate Authenticator
	// Log tells of each node's streams being admitted and closed, with how many it has open then: what a handover
	// waiting on a proxy is read against. The zero Logger logs nothing.
	Log logr.Logger

	mu      sync.Mutex
	streams map[int64]*streamState
	nodes   map[string]*NodeState // by NodeKey
	conns   map[string]int        // open authenticated streams per NodeKey
	changed chan struct{}
}

var _ server.Callbacks = (*Callbacks)(nil)

type streamState struct {
	ctx    context.Context
	token  string
	node   *core.Node // authenticated node; nil before the first request
	meta   NodeMetadata
	nodeID string
	uid    ktypes.UID                // the pod's, as the Authenticator told it; "" if it did not
	key    string                    // NodeKey(nodeID, uid)
	sent   map[string][]sentResponse // per type URL, oldest first
}

// sentResponse is a response not yet ACKed or NACKed: its nonce and the document versions it carried.
type sentResponse struct {
	nonce    string
	versions map[string]string
}

// maxUnanswered bounds the responses remembered per stream and type while waiting for their ACK.
const maxUnanswered = 16

// NewCallbacks returns Callbacks that authenticate with auth.
func NewCallbacks(auth Authenticator) *Callbacks {
	return &Callbacks{
		authenticate: auth,
		streams:      map[int64]*streamState{},
		nodes:        map[string]*NodeState{},
		conns:        map[string]int{},
		changed:      make(chan struct{}),
	}
}

// Acks returns a copy of every node's state, keyed by NodeKey: the node ID, and the pod's UID where the
// Authenticator told it. Nodes stay after they disconnect (Connected false).
func (c *Callbacks) Acks() map[string]NodeState {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]NodeState, len(c.nodes))
	for id, n := range c.nodes {
		cp := *n
		cp.Resources = maps.Clone(n.Resources)
		out[id] = cp
	}
	return out
}

// Changed returns a channel closed at the next change of Acks (an ACK, a NACK, a subscription, a connect or a
// disconnect). Take it before reading Acks, so no change is missed:
//
//	for { ch := cb.Changed(); if done(cb.Acks()) { break }; <-ch }
func (c *Callbacks) Changed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

// Forget drops the record of a disconnected node (key as in Acks), for the manager to call when no handover needs
// to wait for it any more.
func (c *Callbacks) Forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.nodes[key]; ok && c.conns[key] == 0 {
		delete(c.nodes, key)
		c.notifyLocked()
	}
}

// Pending returns, sorted, the keys (as in Acks) of connected nodes subscribed to key that have not ACKed version: the proxies a
// handover still waits for. Whether a disconnected proxy still counts (its pod or lease is alive) is the caller's
// call; a proxy that ACKed a later version is pending too, since versions are opaque here.
func Pending(nodes map[string]NodeState, key ResourceKey, version string) []string {
	var out []string
	for id, n := range nodes {
		if st, ok := n.Resources[key]; ok && n.Connected && st.Acked != version {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

func (c *Callbacks) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// OnStreamOpen takes the stream's bearer token; a stream without one is refused.
func (c *Callbacks) OnStreamOpen(ctx context.Context, id int64, _ string) error {
	token, ok := bearerToken(ctx)
	if !ok {
		return status.Error(codes.Unauthenticated, "xds: no bearer token")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.streams[id] = &streamState{ctx: ctx, token: token, sent: map[string][]sentResponse{}}
	return nil
}

func bearerToken(ctx context.Context) (string, bool) {
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get("authorization") {
		if t, ok := strings.CutPrefix(v, "Bearer "); ok && strings.TrimSpace(t) != "" {
			return strings.TrimSpace(t), true
		}
	}
	return "", false
}

// OnStreamClosed marks the node disconnected once its last stream closes.
func (c *Callbacks) OnStreamClosed(id int64, _ *core.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.streams[id]
	delete(c.streams, id)
	if st != nil && st.node != nil {
		c.disconnectLocked(st.key)
		c.Log.Info("xDS stream closed", "node", st.nodeID, "podUID", st.uid, "stream", id,
			"openStreams", c.conns[st.key])
	}
}

func (c *Callbacks) disconnectLocked(key string) {
	c.conns[key]--
	if c.conns[key] <= 0 {
		delete(c.conns, key)
		if n := c.nodes[key]; n != nil {
			n.Connected, n.Since = false, time.Now()
		}
	}
	c.notifyLocked()
}

// OnStreamRequest authenticates the node, checks the subscription, and records an ACK or NACK.
func (c *Callbacks) OnStreamRequest(id int64, req *discovery.DiscoveryRequest) error {
	c.mu.Lock()
	st := c.streams[id]
	c.mu.Unlock()
	if st == nil {
		return status.Error(codes.Unauthenticated, "xds: stream was not opened")
	}
	if st.node == nil || !proto.Equal(st.node, req.GetNode()) {
		if err := c.admit(st, req.GetNode()); err != nil {
			return err
		}
	}
	if len(req.GetResourceNames()) == 0 {
		return status.Error(codes.PermissionDenied, "xds: wildcard subscriptions are not served; name your resource")
	}
	for _, name := range req.GetResourceNames() {
		if name != st.meta.ResourceName() {
			return status.Errorf(codes.PermissionDenied, "xds: node %q may not read %q", st.nodeID, name)
		}
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodes[st.key]
	for _, name := range req.GetResourceNames() {
		k := ResourceKey{req.GetTypeUrl(), name}
		if _, ok := n.Resources[k]; !ok {
			n.Resources[k] = AckState{}
		}
	}
	if nonce := req.GetResponseNonce(); nonce != "" {
		sent := st.sent[req.GetTypeUrl()]
		if i := slices.IndexFunc(sent, func(s sentResponse) bool { return s.nonce == nonce }); i >= 0 {
			held := heldVersions(req.GetErrorDetail().GetDetails())
			for name, v := range sent[i].versions {
				k := ResourceKey{req.GetTypeUrl(), name}
				if d := req.GetErrorDetail(); d != nil {
					acked, ok := held[name]
					if !ok {
						acked = n.Resources[k].Acked
					}
					n.Resources[k] = AckState{Acked: acked, Nacked: v, Error: d.GetMessage(),
						Conflict: codes.Code(d.GetCode()) == codes.FailedPrecondition}
				} else {
					n.Resources[k] = AckState{Acked: v}
				}
			}
			st.sent[req.GetTypeUrl()] = sent[i+1:]
		}
	}
	c.notifyLocked()
	return nil
}

// admit authenticates node on st, outside the lock (the Authenticator may call the API server).
func (c *Callbacks) admit(st *streamState, node *core.Node) error {
	meta, err := ParseNode(node)
	if err != nil {
		return status.Errorf(codes.InvalidArgument, "xds: %v", err)
	}
	if c.authenticate == nil {
		return status.Error(codes.Unauthenticated, "xds: no authenticator configured")
	}
	var uid ktypes.UID
	if err := c.authenticate(context.WithValue(st.ctx, podUIDSlot{}, &uid), st.token, node); err != nil {
		return status.Errorf(codes.Unauthenticated, "xds: node %q: %v", node.GetId(), err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st.node != nil {
		c.disconnectLocked(st.key)
	}
	st.node, st.meta, st.nodeID, st.uid, st.key = node, meta, node.GetId(), uid, NodeKey(node.GetId(), uid)
	n := c.nodes[st.key]
	if n == nil || n.Metadata != meta {
		n = &NodeState{Resources: map[ResourceKey]AckState{}}
		c.nodes[st.key] = n
	}
	if !n.Connected {
		n.Since = time.Now()
	}
	n.Metadata, n.PodUID, n.Connected = meta, uid, true
	c.conns[st.key]++
	c.notifyLocked()
	c.Log.Info("xDS stream admitted", "node", st.nodeID, "podUID", uid, "group", meta.ResourceName(),
		"openStreams", c.conns[st.key])
	return nil
}

// OnStreamResponse remembers which document versions a response carried, to resolve its ACK.
func (c *Callbacks) OnStreamResponse(_ context.Context, id int64, req *discovery.DiscoveryRequest, resp *discovery.DiscoveryResponse) {
	versions := make(map[string]string, len(resp.GetResources()))
	for _, a := range resp.GetResources() {
		if name, doc, err := Decode(req.GetTypeUrl(), a); err == nil {
			versions[name] = doc.Version
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.streams[id]
	if st == nil {
		return
	}
	sent := append(st.sent[req.GetTypeUrl()], sentResponse{nonce: resp.GetNonce(), versions: versions})
	if len(sent) > maxUnanswered {
		sent = sent[len(sent)-maxUnanswered:]
	}
	st.sent[req.GetTypeUrl()] = sent
}
