package sharding

import (
	"context"
	"fmt"
	"strings"
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

func TestStepConditions(t *testing.T) {
	pods := func(names ...string) map[string]bool {
		m := map[string]bool{}
		for _, n := range names {
			m[n] = true
		}
		return m
	}
	for _, tc := range []struct {
		name        string
		p           stepProxies
		ready       metav1.ConditionStatus
		reason      string
		progressing metav1.ConditionStatus
		says        string
	}{
		{"every proxy has the spec's step", stepProxies{members: 2, acked: 2, done: true},
			metav1.ConditionTrue, "Assigned", metav1.ConditionFalse, "acknowledged by all 2"},
		{"a proxy counted out", stepProxies{members: 2, acked: 1, done: true},
			metav1.ConditionTrue, "Assigned", metav1.ConditionFalse, "out of contact past their lease"},
		{"a step short of the spec's is out", stepProxies{members: 2, acked: 2, done: false},
			metav1.ConditionFalse, "HandingOver", metav1.ConditionTrue, "2 of 2 proxies acknowledged"},
		{"a proxy heard from has not acknowledged", stepProxies{members: 2, acked: 1, done: true, pending: []string{"op-1"},
			current: pods("op-0")},
			metav1.ConditionFalse, "HandingOver", metav1.ConditionTrue, "1 of 2 proxies acknowledged"},
		{"a new leader waits for proxies that had the step", stepProxies{members: 2, acked: 2, done: true,
			pending: []string{"op-0", "op-1"}, unheard: pods("op-0", "op-1"), current: pods("op-0", "op-1")},
			metav1.ConditionTrue, ReasonAwaitingProxies, metav1.ConditionFalse, "2 of them before this manager was elected"},
		{"one has reconnected", stepProxies{members: 2, acked: 2, done: true,
			pending: []string{"op-1"}, unheard: pods("op-1"), current: pods("op-0", "op-1")},
			metav1.ConditionTrue, ReasonAwaitingProxies, metav1.ConditionFalse, "1 of them before this manager was elected"},
		{"an awaited proxy of a pod created since the election", stepProxies{members: 3, acked: 2, done: true,
			pending: []string{"op-0", "op-2"}, unheard: pods("op-0", "op-2"), current: pods("op-0", "op-1"), fresh: pods("op-2")},
			metav1.ConditionFalse, ReasonAwaitingProxies, metav1.ConditionFalse, "waiting for 2 this manager has not heard from"},
		{"an awaited proxy of an older pod not known to have the step", stepProxies{members: 3, acked: 2, done: true,
			pending: []string{"op-0", "op-2"}, unheard: pods("op-0", "op-2"), current: pods("op-0", "op-1")},
			metav1.ConditionFalse, "HandingOver", metav1.ConditionTrue, "1 of them not known to have the step"},
		{"the previous leader's grant reached no proxy", stepProxies{members: 2, acked: 0, done: true,
			pending: []string{"op-0", "op-1"}, unheard: pods("op-0", "op-1")},
			metav1.ConditionFalse, "HandingOver", metav1.ConditionTrue, "2 of them not known to have the step"},
		{"a stray is waited for too", stepProxies{members: 2, acked: 2, strays: 1, done: true,
			pending: []string{"op-1", "op-9/uid"}, unheard: pods("op-1"), current: pods("op-0", "op-1")},
			metav1.ConditionFalse, "HandingOver", metav1.ConditionTrue, "1 stray"},
		{"a new leader mid-handover", stepProxies{members: 2, acked: 2, done: false,
			pending: []string{"op-0", "op-1"}, unheard: pods("op-0", "op-1"), current: pods("op-0", "op-1")},
			metav1.ConditionFalse, "HandingOver", metav1.ConditionTrue, "waiting for 2 this manager has not heard from"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ready, progressing := stepConditions(4, tc.p)
			if ready.Status != tc.ready || ready.Reason != tc.reason || progressing.Status != tc.progressing {
				t.Fatalf("Ready %s %s, Progressing %s %s; want Ready %s %s, Progressing %s",
					ready.Status, ready.Reason, progressing.Status, progressing.Reason, tc.ready, tc.reason, tc.progressing)
			}
			if !strings.Contains(ready.Message, tc.says) || !strings.HasPrefix(ready.Message, "epoch 4") {
				t.Errorf("Ready says %q, want it to tell epoch 4 and %q", ready.Message, tc.says)
			}
			if tc.reason == ReasonAwaitingProxies && progressing.Reason != ReasonAwaitingProxies {
				t.Errorf("Progressing reason %s, want %s", progressing.Reason, ReasonAwaitingProxies)
			}
		})
	}
}

// A manager replica that takes over with the spec's step already out waits for the proxies to reconnect, and its
// status says just that: the same epoch, no handover under way, and what each proxy acknowledged (to the previous
// leader) kept, not blanked. A pod created since the election has acknowledged nothing to anyone.
func TestNewLeaderAwaitsProxiesWithoutAHandover(t *testing.T) {
	ctx := context.Background()
	created := metav1.NewTime(time.Now().Add(-time.Hour))
	var objs []client.Object
	for s := range 2 {
		pod := testPod(fmt.Sprint("op-", s), map[string]string{"app": "op", ordinal: fmt.Sprint(s)})
		pod.CreationTimestamp, pod.UID = created, ktypes.UID(fmt.Sprint("uid-", s))
		objs = append(objs, pod)
	}
	for _, ns := range []string{"a", "b", "c", "d"} {
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	c := storedClient(t, objs...)
	sc := testConfig(2)
	if err := c.Create(ctx, sc); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(sc)
	leaderOf := func(pub *fakePublisher) *Reconciler {
		r := &Reconciler{Client: c, Publisher: pub, Recorder: record.NewFakeRecorder(100), ProxyLease: 30 * time.Second}
		r.setDefaults()
		r.serving = time.Now()
		return r
	}
	get := func() *meshv1alpha1.ShardingConfig {
		t.Helper()
		var got meshv1alpha1.ShardingConfig
		if err := c.Get(ctx, key, &got); err != nil {
			t.Fatal(err)
		}
		return &got
	}
	// ack has pods' proxies acknowledge what pub last published to their shards.
	ack := func(pub *fakePublisher, pods ...string) {
		if pub.acks == nil {
			pub.acks = map[string]xds.NodeState{}
		}
		for _, pod := range pods {
			var id shard.ShardID
			fmt.Sscanf(pod, "op-%d", &id)
			pub.acks["ops/"+pod] = acked(sc, id, pub.set[xds.ResourceName(key, int32(id))])
		}
	}
	reconcileOnce := func(r *Reconciler) {
		t.Helper()
		if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: key}); err != nil {
			t.Fatal(err)
		}
	}

	first := &fakePublisher{}
	leader := leaderOf(first)
	for range 6 { // the initial revoke, then the grant, each acknowledged
		reconcileOnce(leader)
		ack(first, "op-0", "op-1")
	}
	reconcileOnce(leader)
	before := get()
	if !meta.IsStatusConditionTrue(before.Status.Conditions, "Ready") || before.Status.ReadyProxies != 2 {
		t.Fatalf("the first leader's handover did not finish: %+v", before.Status)
	}

	second := &fakePublisher{} // hears from nobody yet: the proxies reconnect to it in their own time
	newLeader := leaderOf(second)
	reconcileOnce(newLeader)
	after := get()
	ready := meta.FindStatusCondition(after.Status.Conditions, "Ready")
	progressing := meta.FindStatusCondition(after.Status.Conditions, "Progressing")
	if after.Status.Epoch != before.Status.Epoch {
		t.Fatalf("epoch %d after the failover, want %d unchanged", after.Status.Epoch, before.Status.Epoch)
	}
	if ready.Status != metav1.ConditionTrue || ready.Reason != ReasonAwaitingProxies || progressing.Status != metav1.ConditionFalse {
		t.Errorf("after the failover: Ready %s %s (%s), Progressing %s %s; want Ready True %s, Progressing False",
			ready.Status, ready.Reason, ready.Message, progressing.Status, progressing.Reason, ReasonAwaitingProxies)
	}
	for i, p := range after.Status.Proxies {
		if p.AckedVersion == "" || p.AckedVersion != before.Status.Proxies[i].AckedVersion {
			t.Errorf("proxy of %s: acknowledged %q after the failover, want %q kept", p.Pod, p.AckedVersion, before.Status.Proxies[i].AckedVersion)
		}
	}
	if after.Status.ReadyProxies != 2 {
		t.Errorf("ready proxies %d after the failover, want 2", after.Status.ReadyProxies)
	}

	// A pod of shard 1 created since the election: its proxy is waited for, and acknowledged nothing.
	late := testPod("op-1b", map[string]string{"app": "op", ordinal: "1"})
	late.CreationTimestamp = metav1.NewTime(time.Now().Add(time.Minute))
	if err := c.Create(ctx, late); err != nil {
		t.Fatal(err)
	}
	ack(second, "op-0", "op-1")
	reconcileOnce(newLeader)
	st := get().Status
	ready = meta.FindStatusCondition(st.Conditions, "Ready")
	progressing = meta.FindStatusCondition(st.Conditions, "Progressing")
	if ready.Status != metav1.ConditionFalse || ready.Reason != ReasonAwaitingProxies || progressing.Status != metav1.ConditionFalse {
		t.Errorf("with a new pod's proxy not connected: Ready %s %s, Progressing %s; want Ready False %s, Progressing False",
			ready.Status, ready.Reason, progressing.Status, ReasonAwaitingProxies)
	}
	if p := previousProxy(&meshv1alpha1.ShardingConfig{Status: st}, "op-1b"); p.AckedVersion != "" {
		t.Errorf("a pod created after the election acknowledged %q, want nothing", p.AckedVersion)
	}

	second.acks["ops/op-1b"] = acked(sc, 1, second.set[xds.ResourceName(key, 1)])
	reconcileOnce(newLeader)
	if ready := meta.FindStatusCondition(get().Status.Conditions, "Ready"); ready.Status != metav1.ConditionTrue || ready.Reason != "Assigned" {
		t.Errorf("every proxy reconnected: Ready %s %s, want True Assigned", ready.Status, ready.Reason)
	}
}
