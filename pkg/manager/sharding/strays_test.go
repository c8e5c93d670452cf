package sharding

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/shard"
	"github.com/fedmesh/fedmesh/pkg/xds"
)

// forgettingPublisher is a fakePublisher that records the nodes the controller forgets.
type forgettingPublisher struct {
	fakePublisher
	forgot []string
}

func (p *forgettingPublisher) Forget(key string) {
	p.forgot = append(p.forgot, key)
	delete(p.acks, key)
}

// proxyOf is a node of shard id of sc, in pod (of uid, if any), that acknowledged version ("" for none).
func proxyOf(sc *meshv1alpha1.ShardingConfig, pod string, uid ktypes.UID, id int32, version string, connected bool, since time.Time) xds.NodeState {
	self := ktypes.NamespacedName{Namespace: sc.Namespace, Name: sc.Name}
	return xds.NodeState{
		Metadata:  xds.NodeMetadata{ShardingConfig: self, Shard: id, Pod: ktypes.NamespacedName{Namespace: sc.Namespace, Name: pod}},
		PodUID:    uid,
		Connected: connected,
		Since:     since,
		Resources: map[xds.ResourceKey]xds.AckState{{TypeURL: xds.OwnershipType, Name: xds.ResourceName(self, id)}: {Acked: version}},
	}
}

// A proxy the xDS server knows serves a shard of the ShardingConfig is waited for even when its pod is no member: its
// pod was relabeled out of spec.selector, lost its ordinal label, or was deleted with --force and is gone from the
// API while its containers still run. Once it disconnects it is waited for until counted out, then forgotten.
func TestProxiesOfNoMemberAreWaitedFor(t *testing.T) {
	sc := testConfig(2)
	pub := split([]string{"a", "b"}, 2)
	want := version(sc, pub)
	now := time.Now()
	relabeled := testPod("op-1", map[string]string{"app": "other", ordinal: "1"})
	unlabeled := testPod("op-3", map[string]string{"app": "op"})
	foreign := proxyOf(sc, "op-6", "", 1, "", true, now)
	foreign.Metadata.Pod.Namespace = "other"
	p := &forgettingPublisher{fakePublisher: fakePublisher{acks: map[string]xds.NodeState{
		"ops/op-0":       proxyOf(sc, "op-0", "", 0, want, true, now),
		"ops/op-1":       proxyOf(sc, "op-1", "", 1, "", true, now),                       // relabeled
		"ops/op-3":       proxyOf(sc, "op-3", "", 1, "", true, now),                       // ordinal label removed
		"ops/op-2#uid-2": proxyOf(sc, "op-2", "uid-2", 0, "", true, now),                  // force-deleted
		"ops/op-4#uid-4": proxyOf(sc, "op-4", "uid-4", 1, "", false, now),                 // force-deleted, just lost
		"ops/op-5#uid-5": proxyOf(sc, "op-5", "uid-5", 1, "", false, now.Add(-time.Hour)), // lost long ago
		"other/op-6":     foreign,                                                         // another namespace's pod
		"ops/db-0":       acked(sc, 0, ""),                                                // no metadata
	}}}
	r := &Reconciler{Client: podClient(t, testPod("op-0", map[string]string{"app": "op", ordinal: "0"}), relabeled, unlabeled),
		Publisher: p, ProxyLease: 30 * time.Second}
	r.setDefaults()
	r.serving = now.Add(-time.Hour)
	members, _, err := r.members(context.Background(), sc, pub)
	if err != nil {
		t.Fatal(err)
	}
	if want := []member{{pod: "op-0", shard: 0}}; !slices.Equal(members, want) {
		t.Fatalf("members = %v, want %v", members, want)
	}
	got := r.pendingAcks(sc, pub, members, now)
	if want := []string{"op-1", "op-2#uid-2", "op-3", "op-4#uid-4"}; !slices.Equal(got, want) {
		t.Fatalf("pending = %v, want %v", got, want)
	}
	if want := []string{"ops/op-5#uid-5"}; !slices.Equal(p.forgot, want) {
		t.Fatalf("forgot %v, want %v (counted out)", p.forgot, want)
	}

	// The strays' shards get their documents, so that they can acknowledge them: here a shard beyond spec.shards.
	p.acks["ops/op-7#uid-7"] = proxyOf(sc, "op-7", "uid-7", 7, "", true, now)
	if err := r.publish(context.Background(), sc, pub, members); err != nil {
		t.Fatal(err)
	}
	if got := p.set["ops/op/shard-7"]; got != want {
		t.Fatalf("shard 7's document is at %q, want %q: a stray of shard 7 could never acknowledge", got, want)
	}
	p.acks["ops/op-7#uid-7"] = proxyOf(sc, "op-7", "uid-7", 7, want, true, now)
	got = r.pendingAcks(sc, pub, members, now)
	if want := []string{"op-1", "op-2#uid-2", "op-3", "op-4#uid-4"}; !slices.Equal(got, want) {
		t.Fatalf("after shard 7's ACK: pending = %v, want %v", got, want)
	}

	// Without a lease a disconnected stray is not waited for: nothing would end the wait.
	r.ProxyLease = 0
	if got := r.pendingAcks(sc, pub, members, now); slices.Contains(got, "op-4#uid-4") {
		t.Fatalf("no lease: pending = %v, want the disconnected stray not waited for", got)
	}
}

// A pod deleted with --force whose proxy still runs, and the pod of the same name created in its place: the new
// pod's ACK does not stand for the old process, nor the old one's for the new pod.
func TestSamePodNameOtherUIDWaitedForApart(t *testing.T) {
	sc := testConfig(2)
	pub := split([]string{"a", "b"}, 2)
	want := version(sc, pub)
	now := time.Now()
	pod := testPod("op-1", map[string]string{"app": "op", ordinal: "1"})
	pod.UID = "uid-new"
	r := &Reconciler{Client: podClient(t, testPod("op-0", map[string]string{"app": "op", ordinal: "0"}), pod),
		ProxyLease: 30 * time.Second}
	r.setDefaults()
	r.serving = now.Add(-time.Hour)
	for _, tc := range []struct {
		name     string
		old, new string // versions acknowledged
		pending  []string
	}{
		{"the new pod acknowledged", "", want, []string{"op-1#uid-old"}},
		{"the old process acknowledged", want, "", []string{"op-1"}},
		{"both acknowledged", want, want, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r.Publisher = &fakePublisher{acks: map[string]xds.NodeState{
				"ops/op-0":         proxyOf(sc, "op-0", "", 0, want, true, now),
				"ops/op-1#uid-old": proxyOf(sc, "op-1", "uid-old", 1, tc.old, true, now),
				"ops/op-1#uid-new": proxyOf(sc, "op-1", "uid-new", 1, tc.new, true, now),
			}}
			members, _, err := r.members(context.Background(), sc, pub)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.pendingAcks(sc, pub, members, now); !slices.Equal(got, tc.pending) {
				t.Fatalf("pending = %v, want %v", got, tc.pending)
			}
		})
	}
}

// While a canary is set, a stable pod whose ordinal is spec.shards (the canary's shard) is not the canary's member;
// its proxy, which took that shard from the label and reads the canary's document, is still waited for.
func TestStablePodWithTheCanaryOrdinal(t *testing.T) {
	sc := testConfig(2)
	sc.Spec.Canary = &meshv1alpha1.Canary{Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "op-canary"}}}
	pub := split([]string{"a", "b"}, 2)
	now := time.Now()
	r := &Reconciler{Client: podClient(t, testPod("op-0", map[string]string{"app": "op", ordinal: "0"}),
		testPod("op-1", map[string]string{"app": "op", ordinal: "1"}),
		testPod("op-2", map[string]string{"app": "op", ordinal: "2"}),
		testPod("op-3", map[string]string{"app": "op", ordinal: "3"}),
		testPod("op-canary", map[string]string{"app": "op-canary", ordinal: "2"})),
		Publisher:  &fakePublisher{acks: map[string]xds.NodeState{"ops/op-2": proxyOf(sc, "op-2", "", 2, "", true, now)}},
		ProxyLease: 30 * time.Second}
	r.setDefaults()
	r.serving = now
	members, _, err := r.members(context.Background(), sc, pub)
	if err != nil {
		t.Fatal(err)
	}
	want := []member{{pod: "op-0", shard: 0}, {pod: "op-1", shard: 1}, {pod: "op-3", shard: 3}, {pod: "op-canary", shard: 2}}
	if !slices.Equal(members, want) {
		t.Fatalf("members = %v, want %v", members, want)
	}
	if got := r.pendingAcks(sc, pub, members, now); !slices.Contains(got, "op-2") {
		t.Fatalf("pending = %v: the proxy reading the canary's document is not waited for", got)
	}
}

// The previous process of a pod replaced in the ordinary way acknowledged, before it went, that its shard owns no
// ranges (as a stable pod rolled under a canary that owns everything does): disconnected, it is not waited for,
// until ranges are published to its shard again.
func TestReleasedStrayNotWaitedFor(t *testing.T) {
	sc := testConfig(2)
	namespaces := []string{"a", "b", "c", "d"}
	pub := Published{Epoch: 3, Assignment: shard.Reassign(shard.SplitByNamespaces(namespaces, ids(2)), shard.SplitByNamespaces(namespaces, ids(1))[0], 0)}
	if !pub.Assignment[1].Empty() {
		t.Fatalf("shard 1 owns %v, want nothing", pub.Assignment[1])
	}
	want := version(sc, pub)
	now := time.Now()
	p := &fakePublisher{acks: map[string]xds.NodeState{
		"ops/op-1#uid-old": proxyOf(sc, "op-1", "uid-old", 1, want, true, now),
	}}
	r := &Reconciler{Publisher: p, ProxyLease: 30 * time.Second}
	r.setDefaults()
	r.serving = now.Add(-time.Hour)
	if got := r.pendingAcks(sc, pub, nil, now); len(got) != 0 {
		t.Fatalf("pending = %v, want none", got)
	}
	// It goes; the next version leaves shard 1 nothing either.
	p.acks["ops/op-1#uid-old"] = proxyOf(sc, "op-1", "uid-old", 1, want, false, now)
	pub.Epoch++
	if err := r.publish(context.Background(), sc, pub, nil); err != nil {
		t.Fatal(err)
	}
	if got := r.pendingAcks(sc, pub, nil, now); len(got) != 0 {
		t.Fatalf("released: pending = %v, want none", got)
	}
	// Shard 1 is given ranges: a process that went without acknowledging that may hold them.
	grant := Published{Epoch: pub.Epoch + 1, Assignment: shard.SplitByNamespaces(namespaces, ids(2))}
	if err := r.publish(context.Background(), sc, grant, nil); err != nil {
		t.Fatal(err)
	}
	if got := r.pendingAcks(sc, grant, nil, now); !slices.Equal(got, []string{"op-1#uid-old"}) {
		t.Fatalf("after a grant to its shard: pending = %v, want [op-1#uid-old]", got)
	}
}
