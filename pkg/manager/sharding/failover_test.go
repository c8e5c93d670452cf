package sharding

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/shard"
	"github.com/fedmesh/fedmesh/pkg/xds"
)

// failover is a ShardingConfig of two shards over pods op-0 and op-1 (created an hour ago, of UIDs uid-0 and
// uid-1) in a stored client, and the manager replicas that lead it in turn.
type failover struct {
	t   *testing.T
	c   client.Client
	sc  *meshv1alpha1.ShardingConfig
	key ktypes.NamespacedName
}

func newFailover(t *testing.T) *failover {
	t.Helper()
	var objs []client.Object
	for s := range 2 {
		pod := testPod(fmt.Sprint("op-", s), map[string]string{"app": "op", ordinal: fmt.Sprint(s)})
		pod.CreationTimestamp, pod.UID = metav1.NewTime(time.Now().Add(-time.Hour)), ktypes.UID(fmt.Sprint("uid-", s))
		objs = append(objs, pod)
	}
	for _, ns := range []string{"a", "b", "c", "d"} {
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	f := &failover{t: t, c: storedClient(t, objs...), sc: testConfig(2)}
	if err := f.c.Create(context.Background(), f.sc); err != nil {
		t.Fatal(err)
	}
	f.key = client.ObjectKeyFromObject(f.sc)
	return f
}

// leader is a replica publishing to pub, elected at serving.
func (f *failover) leader(pub *fakePublisher, serving time.Time) *Reconciler {
	r := &Reconciler{Client: f.c, Publisher: pub, Recorder: record.NewFakeRecorder(100), ProxyLease: 30 * time.Second}
	r.setDefaults()
	r.serving = serving
	return r
}

func (f *failover) status() meshv1alpha1.ShardingConfigStatus {
	f.t.Helper()
	var got meshv1alpha1.ShardingConfig
	if err := f.c.Get(context.Background(), f.key, &got); err != nil {
		f.t.Fatal(err)
	}
	return got.Status
}

// ack has the proxies of pods (op-N, of uid-N) acknowledge what pub last published to their shards.
func (f *failover) ack(pub *fakePublisher, pods ...string) {
	if pub.acks == nil {
		pub.acks = map[string]xds.NodeState{}
	}
	for _, pod := range pods {
		var id shard.ShardID
		fmt.Sscanf(pod, "op-%d", &id)
		pub.acks[xds.NodeKey("ops/"+pod, ktypes.UID(fmt.Sprint("uid-", id)))] = acked(f.sc, id, pub.set[xds.ResourceName(f.key, int32(id))])
	}
}

func (f *failover) reconcile(r *Reconciler) {
	f.t.Helper()
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: f.key}); err != nil {
		f.t.Fatal(err)
	}
}

// settled has a first leader, elected half an hour ago, finish the initial handover, every proxy acknowledging.
func (f *failover) settled() {
	f.t.Helper()
	first := &fakePublisher{}
	leader := f.leader(first, time.Now().Add(-30*time.Minute))
	for range 6 {
		f.reconcile(leader)
		f.ack(first, "op-0", "op-1")
	}
	f.reconcile(leader)
	if st := f.status(); !meta.IsStatusConditionTrue(st.Conditions, "Ready") {
		f.t.Fatalf("the first leader's handover did not finish: %+v", st)
	}
}

func conditions(st meshv1alpha1.ShardingConfigStatus) (ready, progressing *metav1.Condition) {
	return meta.FindStatusCondition(st.Conditions, "Ready"), meta.FindStatusCondition(st.Conditions, "Progressing")
}

// A pod recreated under its name (a StatefulSet's, new UID) while no manager led runs a new proxy that acknowledged
// nothing: a new leader does not credit it with what the old pod's proxy acknowledged.
func TestRecreatedPodIsNotCreditedWithItsPredecessorsAck(t *testing.T) {
	f := newFailover(t)
	f.settled()
	if st := f.status(); st.Proxies[1].PodUID != "uid-1" {
		t.Fatalf("status.proxies does not name the member's pod UID: %+v", st.Proxies)
	}
	old := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "op-1"}}
	if err := f.c.Delete(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	re := testPod("op-1", map[string]string{"app": "op", ordinal: "1"})
	re.UID, re.CreationTimestamp = "uid-recreated", metav1.NewTime(time.Now().Add(-5*time.Second))
	if err := f.c.Create(context.Background(), re); err != nil {
		t.Fatal(err)
	}

	f.reconcile(f.leader(&fakePublisher{}, time.Now())) // elected now, heard from nobody yet
	st := f.status()
	if ready, _ := conditions(st); ready.Status == metav1.ConditionTrue {
		t.Errorf("Ready True (%s) although the recreated pod's proxy acknowledged nothing", ready.Message)
	}
	if st.ReadyProxies != 1 {
		t.Errorf("readyProxies %d, want 1", st.ReadyProxies)
	}
	for _, p := range st.Proxies {
		if p.Pod == "op-1" && (p.AckedVersion != "" || p.PodUID != "uid-recreated") {
			t.Errorf("proxy of the recreated pod: %+v, want its new UID and nothing acknowledged", p)
		}
	}
}

// What a proxy acknowledged to the previous leader is kept only while the new leader waits for it: once it is
// counted out (no contact since the election for ProxyLease plus the margin), it owns nothing and counts as such.
func TestInheritedAckEndsWhenTheProxyIsCountedOut(t *testing.T) {
	f := newFailover(t)
	f.settled()
	second := &fakePublisher{}
	newLeader := f.leader(second, time.Now().Add(-10*time.Minute)) // op-1's proxy has not reached it since
	f.reconcile(newLeader)
	f.ack(second, "op-0")
	f.reconcile(newLeader)
	st := f.status()
	if st.ReadyProxies != 1 || st.Proxies[1].AckedVersion != "" {
		t.Errorf("readyProxies %d, op-1 acknowledged %q; want 1 and nothing: it is counted out", st.ReadyProxies, st.Proxies[1].AckedVersion)
	}
	if ready, _ := conditions(st); ready.Reason != "Assigned" {
		t.Errorf("Ready %s %s, want Assigned (the proxy counted out is not waited for)", ready.Status, ready.Reason)
	}
}

// The previous leader wrote the final step (a grant) and published it, then died before any proxy acknowledged it:
// the new leader says the handover is under way, not that nothing moves.
func TestUndeliveredGrantIsAHandover(t *testing.T) {
	f := newFailover(t)
	first := &fakePublisher{}
	leader := f.leader(first, time.Now().Add(-30*time.Minute))
	for range 10 {
		f.reconcile(leader)
		if f.status().Epoch == 2 {
			break
		}
		f.ack(first, "op-0", "op-1")
	}
	if f.status().Epoch != 2 {
		t.Fatalf("the first leader did not publish the grant: %+v", f.status())
	}
	f.reconcile(f.leader(&fakePublisher{}, time.Now()))
	ready, progressing := conditions(f.status())
	if ready.Reason != "HandingOver" || progressing.Status != metav1.ConditionTrue {
		t.Errorf("Ready %s %s, Progressing %s (%s); want HandingOver, Progressing True: the grant reached no proxy",
			ready.Status, ready.Reason, progressing.Status, progressing.Message)
	}
}

// A stray the previous leader waited for (status.proxies, stray, not at the step) may enforce its old ranges until
// its own lease runs out and may never reconnect: a new leader waits for it as for a member it has not heard from,
// until its election plus ProxyLease and the margin, and keeps it in the status meanwhile.
func TestNewLeaderWaitsForThePreviousLeadersStrays(t *testing.T) {
	sc := testConfig(2)
	pub := split([]string{"a", "b"}, 2)
	pub.Epoch = 2 // the stray is left on epoch 1
	want := version(sc, pub)
	now := time.Now()
	sc.Status.Proxies = []meshv1alpha1.ProxyStatus{
		{Pod: "op-0", Shard: 0, AckedVersion: want},
		{Pod: "op-1", Shard: 1, AckedVersion: want},
		{Pod: "op-1", Shard: 1, Stray: true, PodUID: "uid-old", AckedVersion: "e1.g0"},
		{Pod: "op-2", Shard: 1, Stray: true, PodUID: "uid-2", AckedVersion: want}, // had the step: nothing to wait for
	}
	for _, tc := range []struct {
		name    string
		elected time.Duration // ago
		heard   bool          // this replica heard from the stray (and forgot it)
		want    []string
	}{
		{"just elected", 2 * time.Second, false, []string{"op-1#uid-old"}},
		{"heard from and forgotten", 2 * time.Second, true, nil},
		{"elected past the lease", time.Minute, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reconciler{Client: podClient(t, testPod("op-0", map[string]string{"app": "op", ordinal: "0"}),
				testPod("op-1", map[string]string{"app": "op", ordinal: "1"})),
				Publisher: &fakePublisher{acks: map[string]xds.NodeState{ // the members reconnected
					"ops/op-0": proxyOf(sc, "op-0", "", 0, want, true, now),
					"ops/op-1": proxyOf(sc, "op-1", "", 1, want, true, now),
				}},
				ProxyLease: 30 * time.Second}
			r.setDefaults()
			r.serving = now.Add(-tc.elected)
			if tc.heard {
				r.heardStray("ops/op-1#uid-old", r.serving, now)
			}
			members, _, err := r.members(context.Background(), sc, pub)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.pendingAcks(sc, pub, members, now); !slices.Equal(got, tc.want) {
				t.Errorf("pending = %v, want %v", got, tc.want)
			}
		})
	}
}

// The status keeps the previous leader's stray while it is waited for, so that the next reconcile still sees it, and
// the conditions tell of it.
func TestInheritedStrayStaysInTheStatus(t *testing.T) {
	f := newFailover(t)
	f.settled()
	var sc meshv1alpha1.ShardingConfig
	if err := f.c.Get(context.Background(), f.key, &sc); err != nil {
		t.Fatal(err)
	}
	stray := meshv1alpha1.ProxyStatus{Pod: "op-1", Shard: 1, Stray: true, PodUID: "uid-old", AckedVersion: "e1.g0"}
	sc.Status.Proxies = append(sc.Status.Proxies, stray)
	if err := f.c.Status().Update(context.Background(), &sc); err != nil {
		t.Fatal(err)
	}
	second := &fakePublisher{}
	newLeader := f.leader(second, time.Now())
	f.reconcile(newLeader)
	f.ack(second, "op-0", "op-1")
	f.reconcile(newLeader)
	st := f.status()
	if !slices.Contains(st.Proxies, stray) {
		t.Errorf("status.proxies %+v lost the previous leader's stray %+v", st.Proxies, stray)
	}
	if ready, progressing := conditions(st); ready.Reason != "HandingOver" || progressing.Status != metav1.ConditionTrue {
		t.Errorf("Ready %s %s (%s), Progressing %s; want HandingOver while the stray is waited for",
			ready.Status, ready.Reason, ready.Message, progressing.Status)
	}
}
