package cluster

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/member"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// recordingMembers hands out no clients and records what was forgotten.
type recordingMembers struct{ forgotten []string }

func (m *recordingMembers) ForCluster(context.Context, *clusterv1alpha1.Cluster) (*member.Client, error) {
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
