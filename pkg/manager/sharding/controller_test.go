package sharding

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ktypes "k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/canary"
	"github.com/fedmesh/fedmesh/pkg/shard"
	"github.com/fedmesh/fedmesh/pkg/webhook/inject"
	"github.com/fedmesh/fedmesh/pkg/xds"
)

// fakePublisher records the documents set and answers with fixed acknowledgements.
type fakePublisher struct {
	acks map[string]xds.NodeState
	set  map[string]string // resource name -> version, of the ownership documents
}

func (p *fakePublisher) Set(typeURL, name string, _ []byte, version string) error {
	if typeURL == xds.OwnershipType {
		if p.set == nil {
			p.set = map[string]string{}
		}
		p.set[name] = version
	}
	return nil
}
func (p *fakePublisher) Delete(typeURL, name string) error {
	if typeURL == xds.OwnershipType {
		delete(p.set, name)
	}
	return nil
}
func (p *fakePublisher) Acks() map[string]xds.NodeState { return p.acks }
func (p *fakePublisher) Changed() <-chan struct{}       { return nil }

var _ Publisher = &fakePublisher{}

const ordinal = "apps.kubernetes.io/pod-index"

// testConfig is ShardingConfig ops/op: shards stable shards of the pods app=op.
func testConfig(shards int32) *meshv1alpha1.ShardingConfig {
	return &meshv1alpha1.ShardingConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "op"},
		Spec: meshv1alpha1.ShardingConfigSpec{Shards: shards, ShardOrdinalLabel: ordinal,
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "op"}}},
	}
}

func testPod(name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: name, Labels: labels},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
}

func podClient(t *testing.T, pods ...client.Object) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(pods...).Build()
}

// acked is a connected proxy that acknowledged version of its shard's document.
func acked(sc *meshv1alpha1.ShardingConfig, id shard.ShardID, version string) xds.NodeState {
	name := xds.ResourceName(ktypes.NamespacedName{Namespace: sc.Namespace, Name: sc.Name}, int32(id))
	return xds.NodeState{Connected: true, Since: time.Now(), Resources: map[xds.ResourceKey]xds.AckState{
		{TypeURL: xds.OwnershipType, Name: name}: {Acked: version}}}
}

func TestCountedOut(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	for _, tc := range []struct {
		name    string
		node    xds.NodeState
		known   bool
		serving time.Time
		noLease bool
		want    bool
	}{
		{"connected, however long", xds.NodeState{Connected: true, Since: ago(time.Hour)}, true, ago(time.Hour), false, false},
		{"disconnected within lease and margin", xds.NodeState{Since: ago(49 * time.Second)}, true, ago(time.Hour), false, false},
		{"disconnected past lease and margin", xds.NodeState{Since: ago(51 * time.Second)}, true, ago(time.Hour), false, true},
		{"never heard from, serving past lease and margin", xds.NodeState{}, false, ago(51 * time.Second), false, true},
		{"never heard from, serving within lease and margin", xds.NodeState{}, false, ago(49 * time.Second), false, false},
		{"never heard from, not serving yet", xds.NodeState{}, false, time.Time{}, false, false},
		{"no lease: nobody counted out", xds.NodeState{Since: ago(time.Hour)}, true, ago(time.Hour), true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reconciler{ProxyLease: 30 * time.Second, LeaseMargin: 20 * time.Second}
			if tc.noLease {
				r.ProxyLease = 0
			}
			if got := r.countedOut(tc.node, tc.known, tc.serving, now); got != tc.want {
				t.Fatalf("countedOut = %v, want %v", got, tc.want)
			}
		})
	}
}

// A standby hears from no proxy (it refuses them all), however long it has run: once elected, a proxy it never
// heard from has had only the lease since the election to connect, and is waited for until then.
func TestUnknownProxyWaitedForSinceElection(t *testing.T) {
	sc := testConfig(2)
	pub := split([]string{"a", "b"}, 2)
	members := []member{{pod: "op-0", shard: 0}, {pod: "op-1", shard: 1}}
	r := &Reconciler{Publisher: &fakePublisher{acks: map[string]xds.NodeState{
		"ops/op-0": acked(sc, 0, version(sc, pub)),
	}}, ProxyLease: 30 * time.Second}
	r.setDefaults()
	elected := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error)
	go func() { done <- r.awaitElection(elected)(ctx) }()

	standbyForAnHour := time.Now().Add(time.Hour)
	if got := r.pendingAcks(sc, pub, members, standbyForAnHour); !slices.Equal(got, []string{"op-1"}) {
		t.Fatalf("before the election: pending = %v, want [op-1]", got)
	}
	close(elected)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	serving := r.servingSince()
	if serving.IsZero() {
		t.Fatal("the election was not recorded")
	}
	if got := r.pendingAcks(sc, pub, members, serving.Add(r.ProxyLease)); !slices.Equal(got, []string{"op-1"}) {
		t.Fatalf("a lease after the election: pending = %v, want [op-1]", got)
	}
	if got := r.pendingAcks(sc, pub, members, serving.Add(r.ProxyLease+r.LeaseMargin+time.Second)); len(got) != 0 {
		t.Fatalf("a lease and margin after the election: pending = %v, want none", got)
	}
}

// A terminating pod's proxy (a native sidecar) still serves: the pod is a member until it is gone. A finished pod's
// proxy has exited.
func TestTerminatingPodIsAMember(t *testing.T) {
	sc := testConfig(2)
	terminating := testPod("op-1", map[string]string{"app": "op", ordinal: "1"})
	terminating.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	terminating.Finalizers = []string{"test/hold"} // the fake client keeps a deleted object only with a finalizer
	finished := testPod("op-2", map[string]string{"app": "op", ordinal: "0"})
	finished.Status.Phase = corev1.PodSucceeded
	r := &Reconciler{Client: podClient(t, testPod("op-0", map[string]string{"app": "op", ordinal: "0"}), terminating, finished),
		Publisher: &fakePublisher{}}
	members, pods, err := r.members(context.Background(), sc, split([]string{"a"}, 2))
	if err != nil {
		t.Fatal(err)
	}
	if want := []member{{pod: "op-0", shard: 0}, {pod: "op-1", shard: 1}}; !slices.Equal(members, want) {
		t.Fatalf("members = %v, want %v", members, want)
	}
	if len(pods.stable) != 1 || pods.stable[0].Name != "op-0" {
		t.Fatalf("stable pods = %v, want only op-0 (the rollout measures the pods that are not going away)", pods.stable)
	}
	// Shard 1's pod is going and its next one is not there yet: not every shard has rolled out.
	if !pods.everyShard(1) || pods.everyShard(2) {
		t.Errorf("stable shards %v: want shard 0 alone", pods.stableShards)
	}
	r.setDefaults()
	r.ProxyLease = 30 * time.Second
	r.serving = time.Now()
	if got := r.pendingAcks(sc, split([]string{"a"}, 2), members, time.Now()); !slices.Contains(got, "op-1") {
		t.Fatalf("pending = %v: the terminating pod's proxy is not waited for", got)
	}
}

// removedCanary is a ShardingConfig of 2 stable shards whose spec.canary was removed mid-rollout: the published
// assignment still gives the canary shard 2 a tenth of the namespaces.
func removedCanary(t *testing.T) (*meshv1alpha1.ShardingConfig, Published) {
	t.Helper()
	sc := testConfig(2)
	stable := shard.SplitByNamespaces([]string{"a", "b", "c", "d"}, ids(2))
	pub := Published{Epoch: 7, Assignment: shard.Reassign(stable, canary.PercentSet(10), 2)}
	sc.Status.Epoch = pub.Epoch
	sc.Status.Assignment = shard.StatusAssignment(pub.Assignment)
	sc.Status.Canary = &meshv1alpha1.CanaryStatus{Phase: meshv1alpha1.CanaryProgressing,
		Ranges: shard.StatusRanges(canary.PercentSet(10)), StableAssignment: shard.StatusAssignment(stable)}
	return sc, pub
}

// The revoke that returns a removed canary's namespaces is published to the canary shard too.
func TestShardsOfRemovedCanary(t *testing.T) {
	sc, pub := removedCanary(t)
	next, done := Step(pub, stableTarget(sc, pub, ids(2), []string{"a", "b", "c", "d"}))
	if done || !next.Assignment[2].Empty() {
		t.Fatalf("step = %v, done %v; want the revoke from shard 2", next.Assignment, done)
	}
	stableMembers := []member{{pod: "op-0", shard: 0}, {pod: "op-1", shard: 1}}
	if got := shardsOf(sc, next, stableMembers); !slices.Contains(got, 2) {
		t.Fatalf("shardsOf = %v: the canary shard is not told it loses its namespaces", got)
	}
	p := &fakePublisher{}
	r := &Reconciler{Publisher: p}
	if err := r.publish(context.Background(), sc, next, stableMembers); err != nil {
		t.Fatal(err)
	}
	if got, want := p.set["ops/op/shard-2"], version(sc, next); got != want {
		t.Fatalf("shard 2's document is at %q, want %q", got, want)
	}
}

// Once spec.canary is gone, the canary's pods (by their ordinal label, or by what their proxies announced) are still
// members, and the revoke waits for their proxies.
func TestRemovedCanaryPodsAreMembers(t *testing.T) {
	sc, pub := removedCanary(t)
	canaryPod := testPod("op-canary", map[string]string{"app": "op-canary", ordinal: "2"})
	canaryPod.Annotations = map[string]string{inject.ShardingConfigAnnotation: "op"}
	unlabeled := testPod("op-canary-b", map[string]string{"app": "op-canary"})
	// Another StatefulSet's pod, of the same ordinal, its proxy serving another ShardingConfig.
	other := testPod("db-2", map[string]string{"app": "db", ordinal: "2"})
	other.Annotations = map[string]string{inject.ShardingConfigAnnotation: "ops/db"}
	node := acked(sc, 2, "e6.g0")
	node.Metadata = xds.NodeMetadata{ShardingConfig: ktypes.NamespacedName{Namespace: "ops", Name: "op"}, Shard: 2,
		Pod: ktypes.NamespacedName{Namespace: "ops", Name: "op-canary-b"}}
	p := &fakePublisher{acks: map[string]xds.NodeState{"ops/op-canary-b": node}}
	r := &Reconciler{Client: podClient(t, testPod("op-0", map[string]string{"app": "op", ordinal: "0"}),
		testPod("op-1", map[string]string{"app": "op", ordinal: "1"}), canaryPod, unlabeled, other), Publisher: p}
	members, _, err := r.members(context.Background(), sc, pub)
	if err != nil {
		t.Fatal(err)
	}
	want := []member{{pod: "op-0", shard: 0}, {pod: "op-1", shard: 1}, {pod: "op-canary", shard: 2}, {pod: "op-canary-b", shard: 2}}
	if !slices.Equal(members, want) {
		t.Fatalf("members = %v, want %v", members, want)
	}
	r.setDefaults()
	r.ProxyLease = 30 * time.Second
	r.serving = time.Now()
	next, _ := Step(pub, stableTarget(sc, pub, ids(2), []string{"a", "b", "c", "d"}))
	if got := r.pendingAcks(sc, next, members, time.Now()); !slices.Contains(got, "op-canary") || !slices.Contains(got, "op-canary-b") {
		t.Fatalf("pending = %v: the revoke does not wait for the canary's proxies", got)
	}

	// Once the canary shard owns nothing and its record is gone, its pods are not members any more.
	sc.Status.Canary = nil
	members, _, err = r.members(context.Background(), sc, next)
	if err != nil {
		t.Fatal(err)
	}
	if want := want[:2]; !slices.Equal(members, want) {
		t.Fatalf("members = %v, want %v", members, want)
	}
}

// A revoke is "Revoked" however little it leaves to nobody; a grant is "Granted".
func TestHandoverPhase(t *testing.T) {
	namespaces := []string{"a", "b", "c", "d", "e", "f"}
	pub := Published{Epoch: 1, Assignment: shard.SplitByNamespaces(namespaces, ids(2))}
	revoke, _ := Step(pub, shard.Carve(pub.Assignment, "c", 2))
	if got := handoverPhase(revoke.Assignment); got != "Revoked" {
		t.Fatalf("revoking one namespace: phase %q, want Revoked (owned %v)", got, revoke.Assignment.Owned())
	}
	grant, _ := Step(revoke, shard.Carve(pub.Assignment, "c", 2))
	if got := handoverPhase(grant.Assignment); got != "Granted" {
		t.Fatalf("granting: phase %q, want Granted", got)
	}
}

// heldEpoch reads the epochs of the documents of sc's name that proxies hold, and of no other; the status is
// behind when a member's proxy refused the status's epoch as conflicting with one it holds of that epoch or later.
func TestHeldEpoch(t *testing.T) {
	sc := testConfig(2)
	self := ktypes.NamespacedName{Namespace: "ops", Name: "op"}
	node := func(pod string, id int32, ack xds.AckState) xds.NodeState {
		n := acked(sc, shard.ShardID(id), "")
		n.Metadata = xds.NodeMetadata{ShardingConfig: self, Shard: id, Pod: ktypes.NamespacedName{Namespace: "ops", Name: pod}}
		n.Resources[xds.ResourceKey{TypeURL: xds.OwnershipType, Name: xds.ResourceName(self, id)}] = ack
		return n
	}
	members := []member{{pod: "op-0", shard: 0}, {pod: "op-1", shard: 1}}
	other := acked(testConfig(2), 0, "e40.g1")
	other.Metadata = xds.NodeMetadata{ShardingConfig: ktypes.NamespacedName{Namespace: "ops", Name: "db"}, Shard: 0}
	gone := func(n xds.NodeState) xds.NodeState { n.Connected = false; return n }
	refused := func(acked, nacked string) xds.AckState {
		return xds.AckState{Acked: acked, Nacked: nacked, Error: "epoch conflict", Conflict: true}
	}
	for _, tc := range []struct {
		name       string
		nodes      map[string]xds.NodeState
		status     int64
		held       int64
		wantBehind bool
	}{
		{"no proxies", nil, 0, 0, false},
		{"acknowledged", map[string]xds.NodeState{"ops/op-0": node("op-0", 0, xds.AckState{Acked: "e7.g3.cabc"}),
			"ops/op-1": node("op-1", 1, xds.AckState{Acked: "e5.g2"}), "ops/db-0": other}, 7, 7, false},
		{"an invalid document refused", map[string]xds.NodeState{
			"ops/op-0": node("op-0", 0, xds.AckState{Acked: "e7.g3", Nacked: "e8.g4", Error: "bad"})}, 8, 7, false},
		{"a lost status's epoch refused as older", map[string]xds.NodeState{
			"ops/op-0": node("op-0", 0, refused("e7.g3", "e1.g3"))}, 1, 7, true},
		{"a lost status's assignment refused at the same epoch", map[string]xds.NodeState{
			"ops/op-0": node("op-0", 0, refused("e1.g1", "e1.g2"))}, 1, 1, true},
		{"a refusal from before the restart above it", map[string]xds.NodeState{
			"ops/op-0": node("op-0", 0, refused("e7.g3", "e1.g3"))}, 8, 7, false},
		{"a refusal of a status since moved on (a new leader's stale read)", map[string]xds.NodeState{
			"ops/op-0": node("op-0", 0, refused("e8.g1", "e7.g1"))}, 8, 8, false},
		{"a refusal by a stray still waited for (connected)", map[string]xds.NodeState{
			"ops/relabeled": node("relabeled", 0, refused("e7.g1", "e5.g1"))}, 5, 7, true},
		{"a refusal by a stray no handover waits for", map[string]xds.NodeState{
			"ops/gone": gone(node("gone", 0, refused("e7.g1", "e5.g1")))}, 5, 7, false},
		{"an epoch past what any manager counts to", map[string]xds.NodeState{
			"ops/op-0": node("op-0", 0, refused(fmt.Sprintf("e%d.g1", int64(math.MaxInt64-1)), "e1.g1"))}, 1, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reconciler{Publisher: &fakePublisher{acks: tc.nodes}}
			held, behind := r.heldEpoch(sc, Published{Epoch: tc.status}, members)
			if held != tc.held || behind != tc.wantBehind {
				t.Errorf("heldEpoch = %d, %v; want %d, %v", held, behind, tc.held, tc.wantBehind)
			}
		})
	}
}
