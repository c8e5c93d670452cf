package scheduling

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/scheduler"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// testNotReadyKeepsNoMore: a binding's divided replicas on a cluster that turns not ready (without failover to
// take them off) stay there, but a scale-up puts none of the new ones there; a scale-down takes from it too.
func testNotReadyKeepsNoMore(t *testing.T, c client.Client) {
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "scale"}}); err != nil {
		t.Fatal(err)
	}
	rb := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "scale", Name: "api-deployment"},
		Spec: workv1alpha1.ResourceBindingSpec{
			Resource: workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "scale", Name: "api"},
			Replicas: 4,
			Placement: &policyv1alpha1.Placement{
				ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1", "member2"}},
				ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
					ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
					ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
				},
			},
		},
	}
	if err := c.Create(ctx, rb); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(rb)
	fedtest.Eventually(t, 20*time.Second, "2 and 2", scheduledTo(c, key, []workv1alpha1.TargetCluster{{Name: "member1", Replicas: 2}, {Name: "member2", Replicas: 2}}))

	// member1 fails, as the cluster controller says it: Ready False and the not-ready taint.
	t.Cleanup(func() {
		setNotReadyTaint(t, c, "member1", false)
		setReady(t, c, "member1", metav1.ConditionTrue)
	})
	if err := c.Get(ctx, key, rb); err != nil {
		t.Fatal(err)
	}
	version := rb.ResourceVersion
	setReady(t, c, "member1", metav1.ConditionFalse)
	setNotReadyTaint(t, c, "member1", true)
	time.Sleep(time.Second)
	if err := c.Get(ctx, key, rb); err != nil {
		t.Fatal(err)
	}
	if rb.ResourceVersion != version {
		t.Errorf("binding written though its replicas did not change: %+v", rb.Spec.Clusters)
	}

	scale := func(replicas int32) {
		t.Helper()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := c.Get(ctx, key, rb); err != nil {
				return err
			}
			rb.Spec.Replicas = replicas
			return c.Update(ctx, rb)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	scale(6)
	fedtest.Eventually(t, 20*time.Second, "the 2 new replicas on member2", scheduledTo(c, key, []workv1alpha1.TargetCluster{{Name: "member1", Replicas: 2}, {Name: "member2", Replicas: 4}}))
	scale(2)
	fedtest.Eventually(t, 20*time.Second, "scaled down on both", scheduledTo(c, key, []workv1alpha1.TargetCluster{{Name: "member1", Replicas: 1}, {Name: "member2", Replicas: 1}}))
	if err := c.Delete(ctx, rb); err != nil {
		t.Fatal(err)
	}
}

// setNotReadyTaint puts the not-ready taint (NoSchedule) on the Cluster, or takes it off, as the cluster
// controller would.
func setNotReadyTaint(t *testing.T, c client.Client, name string, on bool) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var mc clusterv1alpha1.Cluster
		if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &mc); err != nil {
			return err
		}
		var taints []corev1.Taint
		for _, tt := range mc.Spec.Taints {
			if tt.Key != scheduler.NotReadyTaintKey {
				taints = append(taints, tt)
			}
		}
		if on {
			now := metav1.Now()
			taints = append(taints, corev1.Taint{Key: scheduler.NotReadyTaintKey, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &now})
		}
		mc.Spec.Taints = taints
		return c.Update(context.Background(), &mc)
	})
	if err != nil {
		t.Fatal(err)
	}
}
