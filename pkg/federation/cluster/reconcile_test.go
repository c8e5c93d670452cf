package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/member"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// recordingMembers hands out no clients (err, when set, says why) and records what was forgotten.
type recordingMembers struct {
	forgotten []string
	err       error
}

func (m *recordingMembers) ForCluster(context.Context, *clusterv1alpha1.Cluster) (*member.Client, error) {
	if m.err != nil {
		return nil, m.err
	}
	panic("no member should be contacted")
}
func (m *recordingMembers) Forget(name string) { m.forgotten = append(m.forgotten, name) }

func TestDeletedClusterIsForgotten(t *testing.T) {
	members := &recordingMembers{}
	r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(fedtest.Scheme()).Build(), Members: members}
	r.Options.setDefaults()
	r.state("gone").failures = 2
	readyGauge.WithLabelValues("gone").Set(1)

	res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: "gone"}})
	if err != nil || res != (reconcile.Result{}) {
		t.Fatalf("reconcile: %v %v", res, err)
	}
	if len(members.forgotten) != 1 || members.forgotten[0] != "gone" {
		t.Errorf("forgotten %v, want [gone]", members.forgotten)
	}
	if _, kept := r.probes["gone"]; kept {
		t.Error("probe state kept")
	}
	if readyGauge.DeleteLabelValues("gone") {
		t.Error("the deleted cluster's ready gauge is still there")
	}
}

func TestPullClusterIsNotProbed(t *testing.T) {
	pull := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "edge"}, Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull}}
	r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(fedtest.Scheme()).WithObjects(pull).Build(), Members: &recordingMembers{}}
	r.Options.setDefaults()
	res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: "edge"}})
	if err != nil || res != (reconcile.Result{}) {
		t.Fatalf("reconcile: %v %v, want no requeue", res, err)
	}
}

func TestNotElectedDoesNotProbe(t *testing.T) {
	push := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"}, Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push}}
	r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(fedtest.Scheme()).WithObjects(push).Build(), Members: &recordingMembers{},
		Elected: func() bool { return false }}
	r.Options.setDefaults()
	r.state("member1").failures = 1 // kept from when this federator was elected
	readyGauge.WithLabelValues("member1").Set(1)
	res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: "member1"}})
	if err != nil || res.RequeueAfter != r.Options.ProbeInterval {
		t.Fatalf("reconcile: %v %v, want a look again after the probe interval", res, err)
	}
	if _, kept := r.probes["member1"]; kept {
		t.Error("probe state kept while another federator probes")
	}
	if readyGauge.DeleteLabelValues("member1") {
		t.Error("the ready gauge is still reported while another federator probes")
	}
}

// Whatever stops the probing of a cluster stops the member's pod and node watches that probing started, which
// would otherwise run for the life of the process.
func TestStoppedProbingReleasesTheMembersWatches(t *testing.T) {
	push := clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push, APIEndpoint: "https://member1.example"}
	for _, tc := range []struct {
		name    string
		cluster *clusterv1alpha1.Cluster // nil: deleted
		members *recordingMembers
		// keep: the probe state stays (the cluster is still probed, and its failures counted), without the watches.
		keep bool
	}{
		{name: "switched to Pull", members: &recordingMembers{},
			cluster: &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1", Generation: 2},
				Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull}}},
		{name: "deleted", members: &recordingMembers{}},
		{name: "being deleted", members: &recordingMembers{},
			cluster: &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1", Generation: 2,
				DeletionTimestamp: &metav1.Time{Time: time.Now()}, Finalizers: []string{"fedmesh.io/test"}}, Spec: push}},
		{name: "endpoint gone", members: &recordingMembers{err: errors.New("cluster member1 has no apiEndpoint")}, keep: true,
			cluster: &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1", Generation: 2},
				Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(fedtest.Scheme()).WithStatusSubresource(&clusterv1alpha1.Cluster{})
			if tc.cluster != nil {
				b = b.WithObjects(tc.cluster)
			}
			r := &Reconciler{Client: b.Build(), Members: tc.members, Recorder: record.NewFakeRecorder(10)}
			r.Options.setDefaults()
			// What probing it as a Push cluster left behind.
			stopped := false
			st := r.state("member1")
			st.generation, st.member, st.usage = 1, &member.Client{Name: "member1"}, &usageWatch{stop: func() { stopped = true }}
			readyGauge.WithLabelValues("member1").Set(1)

			if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: "member1"}}); err != nil {
				t.Fatal(err)
			}
			if !stopped {
				t.Error("the member's pod and node watches still run")
			}
			kept, ok := r.probes["member1"]
			switch {
			case tc.keep && (!ok || kept.usage != nil || kept.member != nil):
				t.Errorf("probe state %+v, want it kept without the member's client and watches", kept)
			case !tc.keep && ok:
				t.Error("probe state kept")
			case !tc.keep && readyGauge.DeleteLabelValues("member1"):
				t.Error("the ready gauge is still reported")
			}
			if !tc.keep && (len(tc.members.forgotten) != 1 || tc.members.forgotten[0] != "member1") {
				t.Errorf("forgotten %v, want [member1]", tc.members.forgotten)
			}
		})
	}
}

// A person drains a member with a NoExecute taint written by kubectl, without timeAdded; the controller stamps it
// with the time it first sees it, Push and Pull clusters alike (Karmada's API stamps it on write), so that a
// binding's tolerationSeconds for it run out. A timeAdded already set is the person's, and stays.
func TestPersonsNoExecuteTaintIsStamped(t *testing.T) {
	earlier := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	taints := []corev1.Taint{
		{Key: "drain", Value: "now", Effect: corev1.TaintEffectNoExecute},
		{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule},
		{Key: "drained-before", Effect: corev1.TaintEffectNoExecute, TimeAdded: &earlier},
	}
	for _, mode := range []clusterv1alpha1.ClusterSyncMode{clusterv1alpha1.Pull, clusterv1alpha1.Push} {
		t.Run(string(mode), func(t *testing.T) {
			c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"},
				Spec: clusterv1alpha1.ClusterSpec{SyncMode: mode, Taints: taints}}
			host := fake.NewClientBuilder().WithScheme(fedtest.Scheme()).WithStatusSubresource(&clusterv1alpha1.Cluster{}).WithObjects(c).Build()
			// A Push cluster's member is not reached here: the probe fails at once, as for a missing endpoint.
			r := &Reconciler{Client: host, Members: &recordingMembers{err: errors.New("no endpoint")}, Recorder: record.NewFakeRecorder(10)}
			r.Options.setDefaults()
			before := time.Now().Truncate(time.Second)
			if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: "member1"}}); err != nil {
				t.Fatal(err)
			}
			var got clusterv1alpha1.Cluster
			if err := host.Get(context.Background(), client.ObjectKeyFromObject(c), &got); err != nil {
				t.Fatal(err)
			}
			byKey := map[string]corev1.Taint{}
			for _, tt := range got.Spec.Taints {
				byKey[tt.Key] = tt
			}
			if d := byKey["drain"]; d.TimeAdded == nil || d.TimeAdded.Before(&metav1.Time{Time: before}) || d.Value != "now" {
				t.Errorf("drain taint %v, want it stamped now (after %v) and otherwise as written", d.ToString(), before)
			}
			if d := byKey["dedicated"]; d.TimeAdded != nil {
				t.Errorf("NoSchedule taint stamped: %v", d.TimeAdded)
			}
			if d := byKey["drained-before"]; d.TimeAdded == nil || !d.TimeAdded.Equal(&earlier) {
				t.Errorf("drained-before taint added at %v, want the %v it was written with", d.TimeAdded, earlier)
			}
		})
	}
}

// Only the elected federator writes Clusters; another one leaves a person's taint unstamped, and looks again
// later (a Pull cluster too, which it otherwise leaves alone), so that whoever is elected then stamps it.
func TestNotElectedDoesNotStamp(t *testing.T) {
	for _, mode := range []clusterv1alpha1.ClusterSyncMode{clusterv1alpha1.Pull, clusterv1alpha1.Push} {
		t.Run(string(mode), func(t *testing.T) {
			c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"}, Spec: clusterv1alpha1.ClusterSpec{SyncMode: mode,
				Taints: []corev1.Taint{{Key: "drain", Effect: corev1.TaintEffectNoExecute}}}}
			host := fake.NewClientBuilder().WithScheme(fedtest.Scheme()).WithObjects(c).Build()
			r := &Reconciler{Client: host, Members: &recordingMembers{}, Elected: func() bool { return false }}
			r.Options.setDefaults()
			res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: "member1"}})
			if err != nil || res.RequeueAfter != r.Options.ProbeInterval {
				t.Fatalf("reconcile: %v %v, want a look again after the probe interval", res, err)
			}
			var got clusterv1alpha1.Cluster
			if err := host.Get(context.Background(), client.ObjectKeyFromObject(c), &got); err != nil {
				t.Fatal(err)
			}
			if got.Spec.Taints[0].TimeAdded != nil {
				t.Errorf("stamped by a federator not elected: %v", got.Spec.Taints)
			}
		})
	}
}
