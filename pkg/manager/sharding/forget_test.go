package sharding

import (
	"context"
	"fmt"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/xds"
)

// xdsPublisher is what cmd/manager hands the controller: a real Snapshotter and Callbacks.
type xdsPublisher struct {
	*xds.Snapshotter
	*xds.Callbacks
}

// xdsFixture is a Reconciler over a stored client and a real Snapshotter and Callbacks, with proxies that speak to
// the Callbacks as the xDS server would.
type xdsFixture struct {
	t      *testing.T
	c      client.Client
	snap   *xds.Snapshotter
	cb     *xds.Callbacks
	r      *Reconciler
	stream int64
}

func newXDSFixture(t *testing.T, objs ...client.Object) *xdsFixture {
	f := &xdsFixture{t: t, c: storedClient(t, objs...),
		snap: xds.NewSnapshotter(xds.SnapshotterOptions{VersionPrefix: "t-"}),
		cb:   xds.NewCallbacks(func(context.Context, string, *core.Node) error { return nil })}
	f.r = &Reconciler{Client: f.c, Publisher: xdsPublisher{f.snap, f.cb}, Recorder: record.NewFakeRecorder(10000)}
	f.r.setDefaults()
	return f
}

func (f *xdsFixture) reconcile(key ktypes.NamespacedName, times int) {
	f.t.Helper()
	for range times {
		if _, err := f.r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
			f.t.Fatal(err)
		}
	}
}

func (f *xdsFixture) deleteConfig(key ktypes.NamespacedName) {
	f.t.Helper()
	if err := f.c.Delete(context.Background(), &meshv1alpha1.ShardingConfig{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}); err != nil {
		f.t.Fatal(err)
	}
}

// connect opens a stream for the proxy of pod serving shard id of sc and subscribes it to its ownership document;
// it returns the stream and node.
func (f *xdsFixture) connect(sc ktypes.NamespacedName, id int32, pod string) (int64, *core.Node) {
	f.t.Helper()
	meta := xds.NodeMetadata{ShardingConfig: sc, Shard: id, Pod: ktypes.NamespacedName{Namespace: sc.Namespace, Name: pod}}
	node, err := meta.Node()
	if err != nil {
		f.t.Fatal(err)
	}
	f.stream++
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("authorization", "Bearer tok"))
	if err := f.cb.OnStreamOpen(ctx, f.stream, xds.OwnershipType); err != nil {
		f.t.Fatal(err)
	}
	if err := f.cb.OnStreamRequest(f.stream, &discovery.DiscoveryRequest{Node: node, TypeUrl: xds.OwnershipType,
		ResourceNames: []string{meta.ResourceName()}}); err != nil {
		f.t.Fatal(err)
	}
	return f.stream, node
}

// ack sends the proxy on stream the ownership document now published for it, and has it acknowledge it.
func (f *xdsFixture) ack(stream int64, node *core.Node, name string) xds.Document {
	f.t.Helper()
	doc, ok := f.snap.Get(xds.OwnershipType, name)
	if !ok {
		f.t.Fatalf("no ownership document %s to acknowledge", name)
	}
	// The caches send a resource as an Any of the type URL it is served under.
	env, err := proto.Marshal(xds.Encode(name, doc.Version, doc.Data))
	if err != nil {
		f.t.Fatal(err)
	}
	a := &anypb.Any{TypeUrl: xds.OwnershipType, Value: env}
	req := &discovery.DiscoveryRequest{Node: node, TypeUrl: xds.OwnershipType, ResourceNames: []string{name}}
	nonce := fmt.Sprint("n", stream, doc.Version)
	f.cb.OnStreamResponse(context.Background(), stream, req, &discovery.DiscoveryResponse{TypeUrl: xds.OwnershipType, Nonce: nonce,
		Resources: []*anypb.Any{a}})
	if err := f.cb.OnStreamRequest(stream, &discovery.DiscoveryRequest{Node: node, TypeUrl: xds.OwnershipType,
		ResourceNames: []string{name}, ResponseNonce: nonce}); err != nil {
		f.t.Fatal(err)
	}
	return doc
}

// published counts the documents of both types the xDS caches hold for shards of sc.
func (f *xdsFixture) published(sc ktypes.NamespacedName, shards int32) int {
	n := 0
	for s := range shards {
		for _, typ := range xds.TypeURLs {
			if _, ok := f.snap.Get(typ, xds.ResourceName(sc, s)); ok {
				n++
			}
		}
	}
	return n
}

// A deleted ShardingConfig leaves nothing in the manager: its documents leave the xDS caches, its disconnected
// proxies' records are forgotten, and none of its handover bookkeeping stays, however many come and go.
func TestDeletedShardingConfigLeavesNothing(t *testing.T) {
	f := newXDSFixture(t)
	const cycles = 10
	for i := range cycles {
		sc := testConfig(2)
		sc.Name = fmt.Sprintf("op-%d", i)
		if err := f.c.Create(context.Background(), sc); err != nil {
			t.Fatal(err)
		}
		key := client.ObjectKeyFromObject(sc)
		f.reconcile(key, 2)
		if f.published(key, 2) == 0 {
			t.Fatalf("%s: nothing published", key)
		}
		stream, node := f.connect(key, 0, sc.Name+"-0")
		f.ack(stream, node, xds.ResourceName(key, 0))
		f.cb.OnStreamClosed(stream, node)
		f.deleteConfig(key)
		f.reconcile(key, 2)
		if n := f.published(key, 2); n > 0 {
			t.Errorf("%s deleted: %d documents still in the xDS caches", key, n)
		}
	}
	if acks := f.cb.Acks(); len(acks) > 0 {
		t.Errorf("proxy records of deleted ShardingConfigs kept: %v", acks)
	}
	r := f.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.waiting)+len(r.revoked)+len(r.written)+len(r.released)+len(r.published) > 0 {
		t.Errorf("bookkeeping of deleted ShardingConfigs kept: waiting %v, revoked %v, written %v, released %v, published %v",
			r.waiting, r.revoked, r.written, r.released, r.published)
	}
}

// A ShardingConfig deleted while its handover waits for its proxies is no longer waited for: relayAcks would bring
// it back at every acknowledgement of any proxy, for good.
func TestShardingConfigDeletedMidHandoverNotWaitedFor(t *testing.T) {
	var pods []client.Object
	for s := range 2 {
		pods = append(pods, testPod(fmt.Sprint("op-", s), map[string]string{"app": "op", ordinal: fmt.Sprint(s)}))
	}
	c := storedClient(t, pods...)
	r := &Reconciler{Client: c, Publisher: &fakePublisher{}, Recorder: record.NewFakeRecorder(100)}
	r.setDefaults()
	r.objects = &objectCounter{}
	sc := testConfig(2)
	if err := c.Create(context.Background(), sc); err != nil {
		t.Fatal(err)
	}
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(sc)}
	for range 2 {
		if _, err := r.Reconcile(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	r.mu.Lock()
	waiting := r.waiting[req.NamespacedName]
	r.mu.Unlock()
	if !waiting {
		t.Fatal("the handover does not wait for the proxies that never acknowledged")
	}
	r.objects.counts = map[ktypes.NamespacedName]objectCount{req.NamespacedName: {}}
	if err := c.Delete(context.Background(), sc); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	waiting = r.waiting[req.NamespacedName]
	r.mu.Unlock()
	if waiting {
		t.Error("a deleted ShardingConfig is still waited for")
	}
	if _, ok := r.objects.counts[req.NamespacedName]; ok {
		t.Error("the object counts of a deleted ShardingConfig are kept")
	}
}

// A proxy still connected when its ShardingConfig is deleted keeps its record (the xDS server still serves its
// stream), and loses it at the first sweep after it disconnects. Proxies of ShardingConfigs that exist are kept,
// connected or not.
func TestProxyOfDeletedShardingConfigForgottenOnceDisconnected(t *testing.T) {
	f := newXDSFixture(t)
	gone, kept := testConfig(1), testConfig(1)
	gone.Name, kept.Name = "gone", "kept"
	for _, sc := range []*meshv1alpha1.ShardingConfig{gone, kept} {
		if err := f.c.Create(context.Background(), sc); err != nil {
			t.Fatal(err)
		}
		f.reconcile(client.ObjectKeyFromObject(sc), 1)
	}
	goneKey, keptKey := client.ObjectKeyFromObject(gone), client.ObjectKeyFromObject(kept)
	stream, node := f.connect(goneKey, 0, "gone-0")
	f.ack(stream, node, xds.ResourceName(goneKey, 0))
	keptStream, keptNode := f.connect(keptKey, 0, "kept-0")
	f.cb.OnStreamClosed(keptStream, keptNode)
	// A proxy naming a ShardingConfig that never existed.
	strayStream, strayNode := f.connect(ktypes.NamespacedName{Namespace: "ops", Name: "typo"}, 0, "typo-0")
	f.cb.OnStreamClosed(strayStream, strayNode)

	f.deleteConfig(goneKey)
	f.reconcile(goneKey, 1)
	if _, ok := f.cb.Acks()["ops/gone-0"]; !ok {
		t.Fatal("the record of a connected proxy was dropped")
	}
	f.cb.OnStreamClosed(stream, node)
	f.r.sweep(context.Background())
	acks := f.cb.Acks()
	if _, ok := acks["ops/gone-0"]; ok {
		t.Error("the record of a proxy of a deleted ShardingConfig stays after it disconnected")
	}
	if _, ok := acks["ops/typo-0"]; ok {
		t.Error("the record of a proxy of a ShardingConfig that does not exist stays")
	}
	if _, ok := acks["ops/kept-0"]; !ok {
		t.Error("the record of a disconnected proxy of an existing ShardingConfig was dropped")
	}
}

// A ShardingConfig deleted and created again under the same name publishes to its proxies again, above the epoch
// its proxies still hold of the earlier one.
func TestRecreatedShardingConfigPublishesAgain(t *testing.T) {
	f := newXDSFixture(t)
	sc := testConfig(2)
	if err := f.c.Create(context.Background(), sc.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(sc)
	name := xds.ResourceName(key, 0)
	f.reconcile(key, 2)
	stream, node := f.connect(key, 0, "op-0")
	before := f.ack(stream, node, name)

	f.deleteConfig(key)
	f.reconcile(key, 1)
	if n := f.published(key, 2); n > 0 {
		t.Fatalf("deleted: %d documents still published", n)
	}
	if err := f.c.Create(context.Background(), sc.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	f.reconcile(key, 2)
	if n := f.published(key, 2); n != 2*len(xds.TypeURLs) {
		t.Fatalf("created again: %d documents published, want %d", n, 2*len(xds.TypeURLs))
	}
	after := f.ack(stream, node, name)
	was, _ := epochOf(before.Version)
	is, _ := epochOf(after.Version)
	if is <= was {
		t.Errorf("created again at epoch %d (%s), not above the %d (%s) its proxy holds", is, after.Version, was, before.Version)
	}
	if got := f.cb.Acks()["ops/op-0"].Resources[xds.ResourceKey{TypeURL: xds.OwnershipType, Name: name}].Acked; got != after.Version {
		t.Errorf("the proxy's acknowledgement of %s is not recorded: %q", after.Version, got)
	}
}

// A proxy disconnected within its lease when its ShardingConfig is deleted still serves its last document: its
// record stays, so a ShardingConfig created again under the name publishes above the epoch it holds and its
// handovers wait for it; once out of contact past its lease, the sweep forgets it.
func TestDisconnectedProxyWithinItsLeaseOutlivesItsDeletedShardingConfig(t *testing.T) {
	f := newXDSFixture(t)
	f.r.ProxyLease = time.Hour
	sc := testConfig(2)
	if err := f.c.Create(context.Background(), sc.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(sc)
	name := xds.ResourceName(key, 0)
	f.reconcile(key, 2)
	stream, node := f.connect(key, 0, "op-0")
	before := f.ack(stream, node, name)
	f.cb.OnStreamClosed(stream, node)

	f.deleteConfig(key)
	f.reconcile(key, 1)
	f.r.sweep(context.Background())
	if _, ok := f.cb.Acks()["ops/op-0"]; !ok {
		t.Fatal("the record of a proxy disconnected within its lease was dropped")
	}
	if err := f.c.Create(context.Background(), sc.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	f.reconcile(key, 2)
	doc, _ := f.snap.Get(xds.OwnershipType, name)
	was, _ := epochOf(before.Version)
	if is, _ := epochOf(doc.Version); is <= was {
		t.Errorf("created again at epoch %d (%s), not above the %d (%s) its disconnected proxy holds", is, doc.Version, was, before.Version)
	}

	f.deleteConfig(key)
	f.reconcile(key, 1)
	f.r.ProxyLease, f.r.LeaseMargin = time.Nanosecond, 0 // its lease is over
	f.r.sweep(context.Background())
	if _, ok := f.cb.Acks()["ops/op-0"]; ok {
		t.Error("the record of a proxy out of contact past its lease stays after its ShardingConfig was deleted")
	}
}
