package scheduling

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// TestPlacementFollowsClusters: bindings go to a cluster once it can take them, though nothing of the binding
// changes; the subtests share one host API server.
func TestPlacementFollowsClusters(t *testing.T) {
	c, _ := startHost(t)
	t.Run("the template's CRD installed in a member", func(t *testing.T) { testFollowsAPIs(t, c) })
	t.Run("a duplicated binding left off a full cluster, room freed there", func(t *testing.T) { testDuplicatedFollowsRoom(t, c) })
}

// addCluster creates a Ready Cluster called name, Pull mode (nothing probes it).
func addCluster(t *testing.T, c client.Client, name string) {
	t.Helper()
	if err := c.Create(context.Background(), &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull}}); err != nil {
		t.Fatal(err)
	}
	setReady(t, c, name, metav1.ConditionTrue)
}

// setAPIs reports, as the cluster controller would, the APIs the Cluster serves.
func setAPIs(t *testing.T, c client.Client, name string, apis []clusterv1alpha1.APIEnablement) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var mc clusterv1alpha1.Cluster
		if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &mc); err != nil {
			return err
		}
		mc.Status.APIEnablements = apis
		return c.Status().Update(context.Background(), &mc)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// createBinding creates the namespace and a binding of rb's template there.
func createBinding(t *testing.T, c client.Client, rb *workv1alpha1.ResourceBinding) client.ObjectKey {
	t.Helper()
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: rb.Namespace}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, rb); err != nil {
		t.Fatal(err)
	}
	return client.ObjectKeyFromObject(rb)
}

// testFollowsAPIs: a CloneSet goes nowhere while no cluster serves it, and says so; once the kind is installed in a
// member (only its apiEnablements change), it goes there.
func testFollowsAPIs(t *testing.T, c client.Client) {
	deployments := clusterv1alpha1.APIEnablement{GroupVersion: "apps/v1", Resources: []clusterv1alpha1.APIResource{{Name: "deployments", Kind: "Deployment"}}}
	addCluster(t, c, "crd-later")
	setAPIs(t, c, "crd-later", []clusterv1alpha1.APIEnablement{deployments})
	key := createBinding(t, c, &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kruise", Name: "web-cloneset"},
		Spec: workv1alpha1.ResourceBindingSpec{
			Resource: workv1alpha1.ObjectReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Namespace: "kruise", Name: "web"},
			Replicas: 2,
			Placement: &policyv1alpha1.Placement{
				ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"crd-later"}},
			},
		},
	})
	fedtest.Eventually(t, 20*time.Second, "Scheduled False: crd-later does not serve CloneSets", func() error {
		var rb workv1alpha1.ResourceBinding
		if err := c.Get(context.Background(), key, &rb); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(rb.Status.Conditions, workv1alpha1.ConditionScheduled)
		if len(rb.Spec.Clusters) > 0 || cond == nil || cond.Status != metav1.ConditionFalse ||
			!strings.Contains(cond.Message, "crd-later: does not serve apps.kruise.io/v1alpha1 CloneSet") {
			return fmt.Errorf("clusters %v, condition %+v", rb.Spec.Clusters, cond)
		}
		return nil
	})
	setAPIs(t, c, "crd-later", []clusterv1alpha1.APIEnablement{deployments, {GroupVersion: "apps.kruise.io/v1alpha1",
		Resources: []clusterv1alpha1.APIResource{{Name: "clonesets", Kind: "CloneSet"}}}})
	fedtest.Eventually(t, 20*time.Second, "on crd-later once it serves CloneSets",
		scheduledTo(c, key, []workv1alpha1.TargetCluster{{Name: "crd-later", Replicas: 2}}))
}

// testDuplicatedFollowsRoom: a duplicated binding is placed, Scheduled, on the clusters with room for all its
// replicas; a cluster left out for want of room gets it too once its free resources grow (a capacity report
// only), as "duplicated placements follow the clusters".
func testDuplicatedFollowsRoom(t *testing.T, c client.Client) {
	addCluster(t, c, "small")
	setPodRoom(t, c, "small", "2")
	key := createBinding(t, c, &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "dup", Name: "web-deployment"},
		Spec: workv1alpha1.ResourceBindingSpec{
			Resource: workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "dup", Name: "web"},
			Replicas: 3,
			Placement: &policyv1alpha1.Placement{
				ClusterAffinity:   &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1", "small"}},
				ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDuplicated},
			},
		},
	})
	fedtest.Eventually(t, 20*time.Second, "on member1 only (small has room for 2 of 3)",
		scheduledTo(c, key, []workv1alpha1.TargetCluster{{Name: "member1", Replicas: 3}}))
	setPodRoom(t, c, "small", "10")
	fedtest.Eventually(t, 20*time.Second, "on small too once it has room",
		scheduledTo(c, key, []workv1alpha1.TargetCluster{{Name: "member1", Replicas: 3}, {Name: "small", Replicas: 3}}))
}
