package scheduling

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	clusterhealth "github.com/fedmesh/fedmesh/pkg/federation/cluster"
	"github.com/fedmesh/fedmesh/pkg/federation/member"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// A person drains member1 the Karmada way: a NoExecute taint in its spec.taints, written without timeAdded. The
// cluster controller stamps it, and a binding that tolerates it for 2 s, with failover on, leaves member1 once
// those 2 s are over.
func TestDrainedClusterIsLeftOnceItsTolerationRunsOut(t *testing.T) {
	c, host := startHost(t)
	fedtest.StartManager(t, host.Config(), func(mgr ctrl.Manager) error {
		r := &clusterhealth.Reconciler{Client: mgr.GetClient(), Members: &member.Factory{Host: mgr.GetAPIReader()},
			Recorder: fedtest.Recorder(t, mgr, "fedmesh-cluster")}
		return r.SetupWithManager(mgr)
	})
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}); err != nil {
		t.Fatal(err)
	}
	two := int64(2)
	rb := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web-deployment"},
		Spec: workv1alpha1.ResourceBindingSpec{
			Resource: workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "apps", Name: "web"},
			Replicas: 6,
			Failover: &policyv1alpha1.FailoverBehavior{},
			Placement: &policyv1alpha1.Placement{
				ClusterTolerations: []corev1.Toleration{{Key: "maintenance", Operator: corev1.TolerationOpExists,
					Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &two}},
				ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided},
			},
		},
	}
	if err := c.Create(ctx, rb); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(rb)
	fedtest.Eventually(t, 20*time.Second, "3 and 3", scheduledTo(c, key, []workv1alpha1.TargetCluster{{Name: "member1", Replicas: 3}, {Name: "member2", Replicas: 3}}))

	var m1 clusterv1alpha1.Cluster
	if err := c.Get(ctx, client.ObjectKey{Name: "member1"}, &m1); err != nil {
		t.Fatal(err)
	}
	m1.Spec.Taints = append(m1.Spec.Taints, corev1.Taint{Key: "maintenance", Value: "drain", Effect: corev1.TaintEffectNoExecute})
	if err := c.Update(ctx, &m1); err != nil {
		t.Fatal(err)
	}
	drained := time.Now()
	fedtest.Eventually(t, 15*time.Second, "moved off the drained member1 after its 2 s toleration",
		scheduledTo(c, key, []workv1alpha1.TargetCluster{{Name: "member2", Replicas: 6}}))
	// timeAdded is stored in whole seconds: the 2 s may count from up to 1 s before the drain.
	if moved := time.Since(drained); moved < time.Second {
		t.Errorf("moved off member1 %v after the drain, well within its 2 s toleration", moved)
	}
}
