package xds

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/test/bufconn"
	ktypes "k8s.io/apimachinery/pkg/types"
)

const waitLimit = 5 * time.Second

var sc = ktypes.NamespacedName{Namespace: "ops", Name: "operator"}

func meta(pod string, shard int32) NodeMetadata {
	return NodeMetadata{ShardingConfig: sc, Shard: shard, Pod: ktypes.NamespacedName{Namespace: "ops", Name: pod}}
}

// fakeAuth accepts a token only for the pod it was issued to, as the manager's TokenReview would.
func fakeAuth(tokens map[string]string) Authenticator {
	return func(_ context.Context, token string, node *core.Node) error {
		if pod, ok := tokens[token]; !ok || pod != node.GetId() {
			return errors.New("token not valid for this pod")
		}
		return nil
	}
}

// refusals wraps Callbacks and counts the streams it refused, to wait on.
type refusals struct {
	*Callbacks
	mu sync.Mutex
	n  int
	ch chan struct{}
}

func (r *refusals) count(err error) error {
	if err != nil {
		r.mu.Lock()
		r.n++
		close(r.ch)
		r.ch = make(chan struct{})
		r.mu.Unlock()
	}
	return err
}

func (r *refusals) OnStreamOpen(ctx context.Context, id int64, t string) error {
	return r.count(r.Callbacks.OnStreamOpen(ctx, id, t))
}

func (r *refusals) OnStreamRequest(id int64, req *discovery.DiscoveryRequest) error {
	return r.count(r.Callbacks.OnStreamRequest(id, req))
}

// waitRefused waits until n streams have been refused.
func (r *refusals) waitRefused(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		r.mu.Lock()
		got, ch := r.n, r.ch
		r.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("%d streams refused, want %d", got, n)
		}
	}
}

// manager is a real go-control-plane ADS server over a Snapshotter and Callbacks, on an in-memory listener that a
// restart replaces.
type manager struct {
	t    *testing.T
	snap *Snapshotter
	cb   *refusals

	mu  sync.Mutex
	lis *bufconn.Listener
	g   *grpc.Server
}

func startManager(t *testing.T, auth Authenticator) *manager {
	m := &manager{t: t}
	m.start(auth, "a")
	t.Cleanup(func() { m.mu.Lock(); m.g.Stop(); m.mu.Unlock() })
	return m
}

// start serves a fresh Snapshotter and Callbacks on a fresh listener, then stops the previous server if any.
func (m *manager) start(auth Authenticator, prefix string) {
	snap := NewSnapshotter(SnapshotterOptions{VersionPrefix: prefix})
	cb := &refusals{Callbacks: NewCallbacks(auth), ch: make(chan struct{})}
	lis := bufconn.Listen(1 << 20)
	g := grpc.NewServer()
	ctx, cancel := context.WithCancel(context.Background())
	m.t.Cleanup(cancel)
	RegisterADS(ctx, g, snap, cb)
	go func() { _ = g.Serve(lis) }()

	m.mu.Lock()
	old := m.g
	m.snap, m.cb, m.lis, m.g = snap, cb, lis, g
	m.mu.Unlock()
	if old != nil {
		old.Stop()
	}
}

func (m *manager) dial() grpc.DialOption {
	return grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
		m.mu.Lock()
		lis := m.lis
		m.mu.Unlock()
		return lis.DialContext(ctx)
	})
}

func (m *manager) set(t *testing.T, typeURL string, shard int32, doc, version string) {
	t.Helper()
	if err := m.snap.Set(typeURL, ResourceName(sc, shard), []byte(doc), version); err != nil {
		t.Fatal(err)
	}
}

// waitAcks waits until cond holds on the current server's Acks.
func (m *manager) waitAcks(t *testing.T, what string, cond func(map[string]NodeState) bool) {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		ch := m.cb.Changed()
		acks := m.cb.Acks()
		if cond(acks) {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("timed out waiting for %s; acks: %+v", what, acks)
		}
	}
}

// acked is a condition: node acked version of typeURL's resource of its shard.
func acked(node NodeMetadata, typeURL, version string) func(map[string]NodeState) bool {
	return func(acks map[string]NodeState) bool {
		return acks[node.NodeID()].Resources[ResourceKey{typeURL, node.ResourceName()}].Acked == version
	}
}

// recorder is a proxy's Apply: it keeps every accepted configuration and rejects documents containing "bad".
type recorder struct {
	mu      sync.Mutex
	calls   int
	current map[string]map[string]Document
}

func (r *recorder) apply(typeURL string, docs map[string]Document) error {
	for name, d := range docs {
		if strings.Contains(string(d.Data), "bad") {
			return errors.New("invalid document " + name + " " + d.Version + ": bad range")
		}
		if strings.Contains(string(d.Data), "stale") {
			return Conflict(errors.New("document "+name+" "+d.Version+" is older than the one held"), nil)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.current == nil {
		r.current = map[string]map[string]Document{}
	}
	r.current[typeURL] = docs
	return nil
}

func (r *recorder) snapshot() (int, map[string]map[string]Document) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls, r.current
}

// runClient starts a Client for node with the given token, dialing m, with opts changing its options; it stops
// at the end of the test.
func runClient(t *testing.T, m *manager, node NodeMetadata, token string, opts ...func(*ClientOptions)) (*recorder, string) {
	t.Helper()
	tokenFile := ""
	if token != "" {
		tokenFile = filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rec := &recorder{}
	o := ClientOptions{
		Target: "passthrough:///manager", Insecure: true, TokenFile: tokenFile, Node: node, Apply: rec.apply,
		MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, DialOptions: []grpc.DialOption{m.dial()},
	}
	for _, opt := range opts {
		opt(&o)
	}
	c, err := NewClient(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return rec, tokenFile
}
