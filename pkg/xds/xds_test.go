package xds

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
)

var tokens = map[string]string{"tok-a": "ops/proxy-a", "tok-b": "ops/proxy-b"}

func TestInitialConfigAndUpdate(t *testing.T) {
	m := startManager(t, fakeAuth(tokens))
	node := meta("proxy-a", 0)
	m.set(t, OwnershipType, 0, `{"ranges":["0-7"]}`, "e1")
	m.set(t, TrafficPolicyType, 0, `{"rateLimits":[]}`, "p1")
	rec, _ := runClient(t, m, node, "tok-a")

	m.waitAcks(t, "ACK of e1 and p1", func(a map[string]NodeState) bool {
		return acked(node, OwnershipType, "e1")(a) && acked(node, TrafficPolicyType, "p1")(a) && a[node.NodeID()].Connected
	})
	_, cur := rec.snapshot()
	if got := cur[OwnershipType][node.ResourceName()]; got.Version != "e1" || string(got.Data) != `{"ranges":["0-7"]}` {
		t.Fatalf("applied ownership %+v", got)
	}

	m.set(t, OwnershipType, 0, `{"ranges":["0-3"]}`, "e2")
	m.waitAcks(t, "ACK of e2", acked(node, OwnershipType, "e2"))
	_, cur = rec.snapshot()
	if got := cur[OwnershipType][node.ResourceName()]; got.Version != "e2" || string(got.Data) != `{"ranges":["0-3"]}` {
		t.Fatalf("applied ownership %+v", got)
	}
	if p := Pending(m.cb.Acks(), ResourceKey{OwnershipType, node.ResourceName()}, "e2"); len(p) != 0 {
		t.Fatalf("pending after ACK: %v", p)
	}
}

func TestNackKeepsLastGoodAndReason(t *testing.T) {
	m := startManager(t, fakeAuth(tokens))
	node := meta("proxy-a", 0)
	key := ResourceKey{OwnershipType, node.ResourceName()}
	m.set(t, OwnershipType, 0, `{"ranges":["0-7"]}`, "e1")
	rec, _ := runClient(t, m, node, "tok-a")
	m.waitAcks(t, "ACK of e1", acked(node, OwnershipType, "e1"))

	m.set(t, OwnershipType, 0, `{"ranges":"bad"}`, "e2")
	m.waitAcks(t, "NACK of e2", func(a map[string]NodeState) bool { return a[node.NodeID()].Resources[key].Nacked == "e2" })
	st := m.cb.Acks()[node.NodeID()].Resources[key]
	if st.Acked != "e1" || !strings.Contains(st.Error, "bad range") || st.Conflict {
		t.Fatalf("after NACK: %+v, want e1 still ACKed and the reason", st)
	}
	if p := Pending(m.cb.Acks(), key, "e2"); len(p) != 1 || p[0] != node.NodeID() {
		t.Fatalf("pending = %v", p)
	}
	if _, cur := rec.snapshot(); cur[OwnershipType][key.Name].Version != "e1" {
		t.Fatalf("proxy serves %+v, want e1 kept", cur[OwnershipType][key.Name])
	}

	m.set(t, OwnershipType, 0, `{"ranges":["0-5"]}`, "e3")
	m.waitAcks(t, "ACK of e3", acked(node, OwnershipType, "e3"))
	if st := m.cb.Acks()[node.NodeID()].Resources[key]; st.Nacked != "" || st.Error != "" {
		t.Fatalf("NACK not cleared by a later ACK: %+v", st)
	}
}

// A server that never saw the node ACK learns from its NACK what it keeps serving, and whether it refused the
// document as one that cannot follow that: after a manager restarts, the epoch the proxies enforce is known even
// when the manager offers an older one.
func TestNackTellsANewServerWhatTheNodeServes(t *testing.T) {
	auth := fakeAuth(tokens)
	m := startManager(t, auth)
	node := meta("proxy-a", 0)
	key := ResourceKey{OwnershipType, node.ResourceName()}
	m.set(t, OwnershipType, 0, `{"ranges":["0-7"]}`, "e7")
	runClient(t, m, node, "tok-a")
	m.waitAcks(t, "ACK of e7", acked(node, OwnershipType, "e7"))

	m.start(auth, "b") // a new manager process, knowing nothing of the node
	m.set(t, OwnershipType, 0, `{"ranges":"stale"}`, "e1")
	m.waitAcks(t, "NACK of e1", func(a map[string]NodeState) bool { return a[node.NodeID()].Resources[key].Nacked == "e1" })
	if st := m.cb.Acks()[node.NodeID()].Resources[key]; st.Acked != "e7" || !st.Conflict {
		t.Fatalf("the new server's record after the NACK: %+v, want e7 as what the node serves, in conflict", st)
	}
}

func TestUnauthenticatedGetsNothing(t *testing.T) {
	for _, tc := range []struct{ name, token string }{
		{"no token", ""},
		{"invalid token", "forged"},
		{"another pod's token", "tok-b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := startManager(t, fakeAuth(tokens))
			node := meta("proxy-a", 0)
			m.set(t, OwnershipType, 0, `{}`, "e1")
			rec, tokenFile := runClient(t, m, node, tc.token)
			m.cb.waitRefused(t, 3) // refused, and refused again on retry
			if calls, _ := rec.snapshot(); calls != 0 {
				t.Fatalf("unauthenticated client applied %d configs", calls)
			}
			for id, n := range m.cb.Acks() {
				t.Fatalf("server recorded node %s: %+v", id, n)
			}
			if tokenFile == "" {
				return
			}
			// The token is re-read at each reconnect: once it rotates to a valid one, the proxy gets its config.
			if err := os.WriteFile(tokenFile, []byte("tok-a"), 0o600); err != nil {
				t.Fatal(err)
			}
			m.waitAcks(t, "ACK after token rotation", acked(node, OwnershipType, "e1"))
		})
	}
}

func TestServerRestartReconnects(t *testing.T) {
	auth := fakeAuth(tokens)
	m := startManager(t, auth)
	node := meta("proxy-a", 0)
	publish := func() {
		m.set(t, OwnershipType, 0, `{"ranges":["0-7"]}`, "e1")
		m.set(t, TrafficPolicyType, 0, `{}`, "p1")
	}
	both := func(a map[string]NodeState) bool {
		return acked(node, OwnershipType, "e1")(a) && acked(node, TrafficPolicyType, "p1")(a)
	}
	publish()
	rec, _ := runClient(t, m, node, "tok-a")
	m.waitAcks(t, "ACK of e1 and p1", both)
	callsBefore, _ := rec.snapshot()

	m.start(auth, "b") // a new manager process: fresh caches, republished state
	publish()
	m.waitAcks(t, "ACK of e1 and p1 by the new server", both)
	if calls, _ := rec.snapshot(); calls != callsBefore {
		t.Fatalf("the same config was applied again after reconnecting (%d → %d calls)", callsBefore, calls)
	}

	m.set(t, OwnershipType, 0, `{"ranges":["0-1"]}`, "e2")
	m.waitAcks(t, "ACK of e2 by the new server", acked(node, OwnershipType, "e2"))
}

func TestEachShardGetsOnlyItsOwn(t *testing.T) {
	m := startManager(t, fakeAuth(tokens))
	a, b := meta("proxy-a", 0), meta("proxy-b", 1)
	m.set(t, OwnershipType, 0, `{"shard":0}`, "e1")
	m.set(t, OwnershipType, 1, `{"shard":1}`, "e1")
	recA, _ := runClient(t, m, a, "tok-a")
	recB, _ := runClient(t, m, b, "tok-b")
	m.waitAcks(t, "both ACKs", func(s map[string]NodeState) bool {
		return acked(a, OwnershipType, "e1")(s) && acked(b, OwnershipType, "e1")(s)
	})
	for _, tc := range []struct {
		rec  *recorder
		node NodeMetadata
		want string
	}{{recA, a, `{"shard":0}`}, {recB, b, `{"shard":1}`}} {
		_, cur := tc.rec.snapshot()
		docs := cur[OwnershipType]
		if len(docs) != 1 || string(docs[tc.node.ResourceName()].Data) != tc.want {
			t.Errorf("%s got %v, want only %s", tc.node.NodeID(), docs, tc.want)
		}
	}
}

func TestForeignAndWildcardSubscriptionsRefused(t *testing.T) {
	m := startManager(t, fakeAuth(tokens))
	m.set(t, OwnershipType, 1, `{"shard":1}`, "e1")
	node, err := meta("proxy-a", 0).Node()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient("passthrough:///manager", grpc.WithTransportCredentials(insecure.NewCredentials()), m.dial())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, names := range [][]string{{ResourceName(sc, 1)}, nil} {
		ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer tok-a")
		stream, err := discovery.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := stream.Send(&discovery.DiscoveryRequest{Node: node, TypeUrl: OwnershipType, ResourceNames: names}); err != nil {
			t.Fatal(err)
		}
		resp, err := stream.Recv()
		if status.Code(err) != codes.PermissionDenied {
			t.Fatalf("subscribing to %v: got %v, %v; want PermissionDenied", names, resp, err)
		}
	}
}

// A pod of another namespace, with a token valid for it, is refused a ShardingConfig's ownership: the shards are
// pods of the ShardingConfig's namespace, and no handover would wait for it.
func TestPodOutsideTheShardingConfigsNamespaceRefused(t *testing.T) {
	m := startManager(t, fakeAuth(map[string]string{"tok-x": "team/proxy-x"}))
	m.set(t, OwnershipType, 1, `{"shard":1}`, "e1")
	node, err := meta("proxy-x", 1).Node()
	if err != nil {
		t.Fatal(err)
	}
	// What a proxy claiming ops/operator from namespace team sends: Node() itself refuses to build it.
	node.Id = "team/proxy-x"
	node.Metadata.Fields[metadataKey].GetStructValue().Fields["pod"] = structpb.NewStructValue(&structpb.Struct{
		Fields: map[string]*structpb.Value{"namespace": structpb.NewStringValue("team"), "name": structpb.NewStringValue("proxy-x")}})
	conn, err := grpc.NewClient("passthrough:///manager", grpc.WithTransportCredentials(insecure.NewCredentials()), m.dial())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer tok-x")
	stream, err := discovery.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&discovery.DiscoveryRequest{Node: node, TypeUrl: OwnershipType, ResourceNames: []string{ResourceName(sc, 1)}}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "not in the namespace of its ShardingConfig") {
		t.Fatalf("a pod of namespace team asking for %s's ownership: got %v, %v; want InvalidArgument", sc, resp, err)
	}
	if acks := m.cb.Acks(); len(acks) != 0 {
		t.Fatalf("the server recorded %v", acks)
	}
}

// Contact vouches for what the proxy owns: a traffic policy alone does not restore it, the ownership does, and a
// stream's end takes it away.
func TestContactAwaitsOwnership(t *testing.T) {
	m := startManager(t, fakeAuth(tokens))
	node := meta("proxy-a", 0)
	contacts := make(chan bool, 10)
	m.set(t, TrafficPolicyType, 0, `{}`, "p1")
	runClient(t, m, node, "tok-a", func(o *ClientOptions) { o.OnContact = func(in bool) { contacts <- in } })
	m.waitAcks(t, "ACK of p1", acked(node, TrafficPolicyType, "p1"))
	select {
	case in := <-contacts:
		t.Fatalf("contact %v after a traffic policy alone", in)
	case <-time.After(100 * time.Millisecond):
	}

	// A document the proxy refuses is not what it enforces: no contact either.
	m.set(t, OwnershipType, 0, `{"ranges":["bad"]}`, "e0")
	m.waitAcks(t, "NACK of e0", func(a map[string]NodeState) bool {
		return a[node.NodeID()].Resources[ResourceKey{OwnershipType, node.ResourceName()}].Nacked == "e0"
	})
	select {
	case in := <-contacts:
		t.Fatalf("contact %v after a refused ownership", in)
	case <-time.After(100 * time.Millisecond):
	}

	m.set(t, OwnershipType, 0, `{"ranges":["0-7"]}`, "e1")
	m.waitAcks(t, "ACK of e1", acked(node, OwnershipType, "e1"))
	if in := <-contacts; !in {
		t.Fatal("no contact after the ownership arrived")
	}

	m.start(fakeAuth(tokens), "b") // the stream ends: contact lost, and regained once the new server sends e1
	m.set(t, OwnershipType, 0, `{"ranges":["0-7"]}`, "e1")
	for _, want := range []bool{false, true} {
		select {
		case in := <-contacts:
			if in != want {
				t.Fatalf("contact %v, want %v", in, want)
			}
		case <-time.After(waitLimit):
			t.Fatalf("no contact %v after the manager restarted", want)
		}
	}
}

// Contact is lost when the stream ends, though the proxy is still applying what came before (waiting for its
// writes to finish, say): the manager counts the proxy's lease from then, so the proxy's must not start later.
func TestContactLostWhileApplying(t *testing.T) {
	m := startManager(t, fakeAuth(tokens))
	node := meta("proxy-a", 0)
	contacts := make(chan bool, 10)
	applying, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	m.set(t, OwnershipType, 0, `{"ranges":["0-7"]}`, "e1")
	runClient(t, m, node, "tok-a", func(o *ClientOptions) {
		o.OnContact = func(in bool) { contacts <- in }
		apply := o.Apply
		o.Apply = func(typeURL string, docs map[string]Document) error {
			if d, ok := docs[node.ResourceName()]; ok && d.Version == "e2" {
				close(applying)
				<-release
			}
			return apply(typeURL, docs)
		}
	})
	if in := <-contacts; !in {
		t.Fatal("no contact after the ownership arrived")
	}
	m.set(t, OwnershipType, 0, `{"ranges":["0-3"]}`, "e2")
	<-applying
	m.start(fakeAuth(tokens), "b") // the stream ends while e2 is being applied
	select {
	case in := <-contacts:
		if in {
			t.Fatal("contact true, want false")
		}
	case <-time.After(waitLimit):
		t.Fatal("contact not lost while the proxy was applying: its lease would start late")
	}
}

// A proxy that holds an ownership (e1) and refuses the manager's current one (e2) regains contact on a new stream
// (a manager failover, a network blip): it enforces e1, and its NACK tells the manager so. Without contact its
// ownership lease would run out, and it would own nothing while the manager counts it for e1's ranges.
func TestContactAfterReconnectWithRefusedDocument(t *testing.T) {
	m := startManager(t, fakeAuth(tokens))
	node := meta("proxy-a", 0)
	contacts := make(chan bool, 10)
	m.set(t, OwnershipType, 0, `{"ranges":["0-7"]}`, "e1")
	runClient(t, m, node, "tok-a", func(o *ClientOptions) { o.OnContact = func(in bool) { contacts <- in } })
	if in := <-contacts; !in {
		t.Fatal("no contact after e1")
	}
	m.set(t, OwnershipType, 0, `{"ranges":["0-7"],"bad":1}`, "e2")
	m.waitAcks(t, "NACK of e2", func(a map[string]NodeState) bool {
		return a[node.NodeID()].Resources[ResourceKey{OwnershipType, node.ResourceName()}].Nacked == "e2"
	})
	m.start(fakeAuth(tokens), "b") // the new leader publishes the same e2 from the status
	m.set(t, OwnershipType, 0, `{"ranges":["0-7"],"bad":1}`, "e2")
	if in := <-contacts; in {
		t.Fatal("want contact lost at the stream's end first")
	}
	m.waitAcks(t, "NACK of e2 on the new stream, naming e1 as held", func(a map[string]NodeState) bool {
		st := a[node.NodeID()]
		r := st.Resources[ResourceKey{OwnershipType, node.ResourceName()}]
		return st.Connected && r.Nacked == "e2" && r.Acked == "e1"
	})
	select {
	case in := <-contacts:
		if !in {
			t.Fatal("contact false again")
		}
	case <-time.After(waitLimit):
		t.Fatal("connected, holding e1 (which the manager knows from the NACK), the proxy never regains contact")
	}
}

// A resource deleted (its ShardingConfig is gone) and set again (created again under the same name) reaches the
// node still subscribed to it; the node kept the last version meanwhile.
func TestDeletedResourceSetAgainReachesTheNode(t *testing.T) {
	m := startManager(t, fakeAuth(tokens))
	node := meta("proxy-a", 0)
	m.set(t, OwnershipType, 0, `{"epoch":1}`, "e1")
	rec, _ := runClient(t, m, node, "tok-a")
	m.waitAcks(t, "ACK of e1", acked(node, OwnershipType, "e1"))

	if err := m.snap.Delete(OwnershipType, node.ResourceName()); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.snap.Get(OwnershipType, node.ResourceName()); ok {
		t.Fatal("the deleted resource is still published")
	}
	m.set(t, OwnershipType, 0, `{"epoch":2}`, "e2")
	m.waitAcks(t, "ACK of e2", acked(node, OwnershipType, "e2"))
	_, cur := rec.snapshot()
	if got := cur[OwnershipType][node.ResourceName()]; got.Version != "e2" || string(got.Data) != `{"epoch":2}` {
		t.Fatalf("applied ownership %+v", got)
	}
}
