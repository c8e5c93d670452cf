package xds

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func TestEncodeDecode(t *testing.T) {
	res := Encode("ops/operator/shard-2", "e7", []byte(`{"a":1}`))
	b, err := anypb.New(res)
	if err != nil {
		t.Fatal(err)
	}
	a := &anypb.Any{TypeUrl: OwnershipType, Value: b.GetValue()} // as the cache puts it on the wire
	name, doc, err := Decode(OwnershipType, a)
	if err != nil || name != "ops/operator/shard-2" || !doc.Equal(Document{Version: "e7", Data: []byte(`{"a":1}`)}) {
		t.Fatalf("Decode = %q, %+v, %v", name, doc, err)
	}
	if _, _, err := Decode(TrafficPolicyType, a); err == nil {
		t.Fatal("decoded an ownership resource as a traffic policy")
	}
	bare, _ := anypb.New(wrapperspb.Bytes([]byte(`{}`)))
	if _, _, err := Decode(OwnershipType, &anypb.Any{TypeUrl: OwnershipType, Value: bare.GetValue()}); err == nil {
		t.Fatal("decoded a resource without envelope")
	}
}

func TestNodeRoundTrip(t *testing.T) {
	m := meta("proxy-0", 3)
	n, err := m.Node()
	if err != nil {
		t.Fatal(err)
	}
	if n.GetId() != "ops/proxy-0" || m.ResourceName() != "ops/operator/shard-3" {
		t.Fatalf("id %q, resource %q", n.GetId(), m.ResourceName())
	}
	got, err := ParseNode(n)
	if err != nil || got != m {
		t.Fatalf("ParseNode = %+v, %v; want %+v", got, err, m)
	}

	n.Id = "ops/proxy-1"
	if _, err := ParseNode(n); err == nil || !strings.Contains(err.Error(), "not its pod") {
		t.Fatalf("node speaking for another pod: %v", err)
	}
	n.Id = "ops/proxy-0"
	n.Metadata.Fields[metadataKey].GetStructValue().Fields["shard"] = structpb.NewNumberValue(1.5)
	if _, err := ParseNode(n); err == nil {
		t.Fatal("accepted shard 1.5")
	}
	delete(n.Metadata.Fields[metadataKey].GetStructValue().Fields, "shard")
	if _, err := ParseNode(n); err == nil {
		t.Fatal("accepted a node without shard")
	}
	n.Metadata = nil
	if _, err := ParseNode(n); err == nil {
		t.Fatal("accepted a node without metadata")
	}
	if _, err := (NodeMetadata{}).Node(); err == nil {
		t.Fatal("built a node without identity")
	}
}

// The longest wait between attempts stays well within the caller's contact lease.
func TestMaxBackoffDefaults(t *testing.T) {
	for _, tc := range []struct {
		name          string
		opts          ClientOptions
		wantMin, want time.Duration
	}{
		{"no lease", ClientOptions{}, 250 * time.Millisecond, 30 * time.Second},
		{"the proxy's default lease", ClientOptions{ContactLease: 30 * time.Second}, 250 * time.Millisecond, 7500 * time.Millisecond},
		{"a long lease keeps the cap", ClientOptions{ContactLease: 10 * time.Minute}, 250 * time.Millisecond, 30 * time.Second},
		{"never below the minimum", ClientOptions{ContactLease: 400 * time.Millisecond}, 250 * time.Millisecond, 250 * time.Millisecond},
		{"set explicitly", ClientOptions{ContactLease: 30 * time.Second, MaxBackoff: time.Minute}, 250 * time.Millisecond, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.opts
			o.setDefaults()
			if o.MinBackoff != tc.wantMin || o.MaxBackoff != tc.want {
				t.Errorf("backoff %v..%v, want %v..%v", o.MinBackoff, o.MaxBackoff, tc.wantMin, tc.want)
			}
		})
	}
}

func TestPending(t *testing.T) {
	k := ResourceKey{OwnershipType, "ops/operator/shard-0"}
	nodes := map[string]NodeState{
		"ops/a": {Connected: true, Resources: map[ResourceKey]AckState{k: {Acked: "e2"}}},
		"ops/b": {Connected: true, Resources: map[ResourceKey]AckState{k: {Acked: "e1", Nacked: "e2", Error: "x"}}},
		"ops/c": {Connected: false, Resources: map[ResourceKey]AckState{k: {Acked: "e1"}}},
		"ops/d": {Connected: true, Resources: map[ResourceKey]AckState{{OwnershipType, "ops/operator/shard-1"}: {}}},
		"ops/e": {Connected: true, Resources: map[ResourceKey]AckState{k: {}}},
	}
	if got := Pending(nodes, k, "e2"); strings.Join(got, ",") != "ops/b,ops/e" {
		t.Fatalf("Pending = %v", got)
	}
}
