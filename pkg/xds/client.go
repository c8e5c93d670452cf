package xds

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/go-logr/logr"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"k8s.io/utils/clock"
)

// ApplyFunc takes the whole current configuration of one type URL, keyed by resource name, whenever it changes. It
// returns nil to accept it (ACK) or an error to reject it (NACK with the error's message), in which case the proxy
// must keep serving what it accepted before. docs may be empty when the manager has nothing for the node yet.
type ApplyFunc func(typeURL string, docs map[string]Document) error

// Conflict marks an ApplyFunc's error as a refusal of a valid document that cannot follow the one held (the NACK's
// code is FailedPrecondition rather than InvalidArgument): the server's state is behind the node's, and sending
// the same again will not help. held are the versions of the documents the node enforces, by resource name; the
// NACK tells them (heldDetails), with those of the documents this client accepted, which a restarted proxy's
// persisted configuration may be newer than.
func Conflict(err error, held map[string]string) error { return conflictError{err, held} }

type conflictError struct {
	error
	held map[string]string
}

func (e conflictError) Unwrap() error { return e.error }

// nack is the error_detail of a NACK of err, from a client that accepted docs last.
func nack(err error, docs map[string]Document) *status.Status {
	held := make(map[string]string, len(docs))
	for name, doc := range docs {
		held[name] = doc.Version
	}
	code := codes.InvalidArgument
	var conflict conflictError
	if errors.As(err, &conflict) {
		code = codes.FailedPrecondition
		maps.Copy(held, conflict.held)
	}
	return &status.Status{Code: int32(code), Message: err.Error(), Details: heldDetails(held)}
}

// ClientOptions configures a Client.
type ClientOptions struct {
	// Target is the manager's gRPC address (host:port, or any gRPC target).
	Target string
	// CAFile holds the CA bundle the manager's certificate must chain to, read at every (re)connect like TokenFile:
	// a renewed CA (cert-manager gives a CA a new key) reaches a mounted file, and a proxy that kept the one it
	// started with would fail every handshake once the manager serves the new certificate. Exactly one of CAFile and
	// Insecure must be set.
	CAFile string
	// ServerName is the name the manager's certificate must carry; empty means the target's host.
	ServerName string
	// Insecure uses plaintext, for tests on loopback only: the token would travel in the clear.
	Insecure bool
	// TokenFile holds the pod's service-account token, read at every (re)connect since projected tokens rotate.
	TokenFile string
	// Node is the proxy's identity.
	Node NodeMetadata
	// TypeURLs to subscribe to; default TypeURLs.
	TypeURLs []string
	// Apply receives configuration. Required.
	Apply ApplyFunc
	// MinBackoff and MaxBackoff bound the jittered wait between connection attempts; default 250ms and 30s, or a
	// quarter of ContactLease when that is shorter. A standby manager's refusal (NotLeader) within ContactLease of
	// the last stream that delivered a response is retried after about a second within these bounds, without
	// growing the wait; later ones wait as failures do.
	MinBackoff, MaxBackoff time.Duration
	// ContactLease is how long the caller keeps going without contact (the proxy's ownership lease); 0 if it has
	// no such limit. Attempts must come several times within it: in a manager failover the first ones are refused
	// (not the leader yet) or fail (the old leader is gone), and a wait grown past the lease would cost the proxy
	// its ranges although a new leader is there. Even a quarter of it is too long after the election (which takes
	// about half the lease with the defaults): hence the short retry after a standby's refusal.
	ContactLease time.Duration
	// Log reports connection errors (each ends a stream; Run reconnects). Default: discard.
	Log logr.Logger
	// DialOptions are added to the gRPC client's (a test's bufconn dialer, say).
	DialOptions []grpc.DialOption
	// OnContact, if set, hears true when a stream first delivers a document of the first of TypeURLs that Apply
	// accepts, or refuses while the client holds one it accepted before (the ownership: contact vouches for what the
	// proxy owns, which a response of another type, one without the proxy's document, as a manager that has not
	// published yet sends, or one the proxy refused while it holds none, does not tell; a refusal names the version
	// held, so the manager knows what the proxy enforces), and false as soon as that stream ends, though Apply may
	// still be busy with a response (the manager counts from then): whether the proxy is in contact with the
	// manager, for its ownership lease. A new stream is sent the current documents at once (go-control-plane's
	// caches resend everything to a stream that has been sent nothing), so contact returns with the first response.
	OnContact func(inContact bool)

	clock clock.Clock    // test hook; default the real clock
	rand  func() float64 // test hook; default math/rand/v2
}

func (o *ClientOptions) setDefaults() {
	if len(o.TypeURLs) == 0 {
		o.TypeURLs = TypeURLs
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = 250 * time.Millisecond
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = 30 * time.Second
		if o.ContactLease > 0 {
			o.MaxBackoff = min(o.MaxBackoff, o.ContactLease/4)
		}
		o.MaxBackoff = max(o.MaxBackoff, o.MinBackoff)
	}
	if o.clock == nil {
		o.clock = clock.RealClock{}
	}
	if o.rand == nil {
		o.rand = rand.Float64
	}
}

// tlsConfigFromCA returns a TLS config that trusts only the CA bundle in caFile and expects serverName.
func tlsConfigFromCA(caFile, serverName string) (*tls.Config, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("xds: reading CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("xds: no certificate in %s", caFile)
	}
	return &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12}, nil
}

// transportCredentials secures a new connection: plaintext with Insecure, else TLS trusting CAFile as it is now.
func (c *Client) transportCredentials() (credentials.TransportCredentials, error) {
	if c.opts.Insecure {
		return c.creds, nil
	}
	cfg, err := tlsConfigFromCA(c.opts.CAFile, c.opts.ServerName)
	if err != nil {
		return nil, err
	}
	return credentials.NewTLS(cfg), nil
}

// Client is the proxy's ADS client. It keeps, per type URL, the last configuration it accepted, so that a
// reconnection presents that version and does not re-apply a configuration the proxy already has.
type Client struct {
	opts  ClientOptions
	creds credentials.TransportCredentials // with Insecure; TLS credentials are made per connection
	node  *core.Node
	state map[string]*typeState // touched only by Run's goroutine
}

type typeState struct {
	version string              // version_info of the last ACKed response
	docs    map[string]Document // last accepted configuration
	applied bool                // Apply has accepted something at least once
}

// NewClient checks opts and returns a Client; Run starts it.
func NewClient(opts ClientOptions) (*Client, error) {
	opts.setDefaults()
	node, err := opts.Node.Node()
	if err != nil {
		return nil, fmt.Errorf("xds: %w", err)
	}
	c := &Client{opts: opts, node: node, state: map[string]*typeState{}}
	switch {
	case opts.Target == "":
		return nil, errors.New("xds: client needs a target")
	case opts.Apply == nil:
		return nil, errors.New("xds: client needs an Apply func")
	case (opts.CAFile == "") == !opts.Insecure:
		return nil, errors.New("xds: set exactly one of CAFile and Insecure")
	case opts.Insecure:
		c.creds = insecure.NewCredentials()
	default:
		// Read once here so that a missing or empty file fails at start; session reads it again each time.
		if _, err := c.transportCredentials(); err != nil {
			return nil, err
		}
	}
	for _, t := range opts.TypeURLs {
		c.state[t] = &typeState{docs: map[string]Document{}}
	}
	return c, nil
}

// Run streams configuration until ctx ends, reconnecting with backoff; it returns nil then. The wait resets after
// a stream that delivered a response, and stays short, without growing, while standby managers refuse the streams
// within ContactLease of it (backoff.next).
func (c *Client) Run(ctx context.Context) error {
	bo := newBackoff(c.opts.MinBackoff, c.opts.MaxBackoff, c.opts.ContactLease)
	refusals := 0 // in a row, of which only the first is told at the default verbosity
	for {
		got, err := c.session(ctx)
		how := failed
		switch {
		case got:
			how = served
		case IsNotLeader(err):
			how = refusedByStandby
		}
		var wait time.Duration
		wait, bo = bo.next(how, c.opts.rand(), c.opts.clock.Now())
		if how == refusedByStandby {
			refusals++
		} else {
			refusals = 0
		}
		if ctx.Err() == nil {
			if how == refusedByStandby {
				log := c.opts.Log
				if refusals > 1 {
					log = log.V(1)
				}
				log.Info("manager replica is not the leader; trying again", "target", c.opts.Target, "after", wait, "refusals", refusals, "reason", err.Error())
			} else {
				c.opts.Log.Error(err, "xds stream ended; reconnecting", "target", c.opts.Target, "after", wait)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-c.opts.clock.After(wait):
		}
	}
}

// session runs one ADS stream on a fresh connection (so that only this backoff paces reconnects), and reports
// whether it received a response.
func (c *Client) session(ctx context.Context) (got bool, err error) {
	token, err := c.readToken()
	if err != nil {
		return false, err
	}
	creds, err := c.transportCredentials()
	if err != nil {
		return false, err
	}
	conn, err := grpc.NewClient(c.opts.Target, append([]grpc.DialOption{grpc.WithTransportCredentials(creds),
		grpc.WithKeepaliveParams(ClientKeepalive)}, c.opts.DialOptions...)...)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	}
	stream, err := discovery.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	if err != nil {
		return false, err
	}
	for i, t := range c.opts.TypeURLs {
		req := &discovery.DiscoveryRequest{TypeUrl: t, ResourceNames: c.names(), VersionInfo: c.state[t].version}
		if i == 0 {
			req.Node = c.node
		}
		if err := stream.Send(req); err != nil {
			return false, sendError(stream, err)
		}
	}
	contact := &contact{on: c.opts.OnContact}
	defer contact.lose()
	responses := receive(stream, contact)
	for {
		r := responses.next()
		if r.err != nil {
			return got, r.err
		}
		reply := c.handle(r.resp)
		got = true
		own := c.opts.TypeURLs[0]
		if r.resp.GetTypeUrl() == own && len(r.resp.GetResources()) > 0 && (reply.GetErrorDetail() == nil || c.holds(own)) {
			contact.gain()
		}
		if err := stream.Send(reply); err != nil {
			return got, err
		}
	}
}

// sendError is why a Send on a stream nothing receives from yet failed: io.EOF says the server ended the stream,
// and why (a standby's refusal, say) is the status Recv returns.
func sendError(stream discovery.AggregatedDiscoveryService_StreamAggregatedResourcesClient, err error) error {
	if errors.Is(err, io.EOF) {
		if _, ended := stream.Recv(); ended != nil {
			return ended
		}
	}
	return err
}

func (c *Client) readToken() (string, error) {
	if c.opts.TokenFile == "" {
		return "", nil
	}
	b, err := os.ReadFile(c.opts.TokenFile)
	if err != nil {
		return "", fmt.Errorf("xds: reading token: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

func (c *Client) names() []string { return []string{c.opts.Node.ResourceName()} }

// holds reports whether the client holds an accepted document of typeURL for its node. A refusal of a new one then
// still vouches for what the proxy owns: it keeps enforcing the one it holds, and the NACK names that version, so
// the manager knows it (else a proxy refusing the manager's current document would never regain contact after a
// reconnect, and would give up the ranges it holds and the manager counts it for).
func (c *Client) holds(typeURL string) bool {
	st := c.state[typeURL]
	if st == nil || !st.applied {
		return false
	}
	_, ok := st.docs[c.opts.Node.ResourceName()]
	return ok
}

// handle applies a response and returns the ACK or NACK to send. In state-of-the-world for these types a response
// carries the resources that changed, so they are merged into the accepted set; Apply is called only if the result
// differs from what was accepted (or nothing was yet).
func (c *Client) handle(resp *discovery.DiscoveryResponse) *discovery.DiscoveryRequest {
	t := resp.GetTypeUrl()
	reply := &discovery.DiscoveryRequest{TypeUrl: t, ResourceNames: c.names(), ResponseNonce: resp.GetNonce()}
	st, ok := c.state[t]
	if !ok {
		reply.ErrorDetail = &status.Status{Code: int32(codes.InvalidArgument), Message: "not subscribed to " + t}
		return reply
	}
	docs, changed, err := c.merge(st, resp)
	if err == nil && (changed || !st.applied) {
		err = c.opts.Apply(t, maps.Clone(docs))
	}
	if err != nil {
		reply.VersionInfo = st.version
		reply.ErrorDetail = nack(err, st.docs)
		return reply
	}
	st.version, st.docs, st.applied = resp.GetVersionInfo(), docs, true
	reply.VersionInfo = st.version
	return reply
}

func (c *Client) merge(st *typeState, resp *discovery.DiscoveryResponse) (map[string]Document, bool, error) {
	docs, changed := maps.Clone(st.docs), false
	for _, a := range resp.GetResources() {
		name, doc, err := Decode(resp.GetTypeUrl(), a)
		if err != nil {
			return nil, false, err
		}
		if name != c.opts.Node.ResourceName() {
			return nil, false, fmt.Errorf("xds: got resource %q, subscribed to %q", name, c.opts.Node.ResourceName())
		}
		if old, ok := docs[name]; !ok || !old.Equal(doc) {
			docs[name], changed = doc, true
		}
	}
	return docs, changed, nil
}
