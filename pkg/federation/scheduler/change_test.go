package scheduler

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
)

func TestClusterChange(t *testing.T) {
	base := func() *clusterv1alpha1.Cluster {
		return &clusterv1alpha1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: "member1", Labels: map[string]string{"env": "prod"}},
			Spec:       clusterv1alpha1.ClusterSpec{Region: "eu", Zones: []string{"eu-1"}},
			Status: clusterv1alpha1.ClusterStatus{
				KubernetesVersion: "v1.36.3",
				APIEnablements: []clusterv1alpha1.APIEnablement{{GroupVersion: "apps/v1",
					Resources: []clusterv1alpha1.APIResource{{Name: "deployments", Kind: "Deployment"}}}},
				Conditions: []metav1.Condition{{Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionTrue,
					LastTransitionTime: metav1.NewTime(time.Unix(100, 0))}},
				ResourceSummary: &clusterv1alpha1.ResourceSummary{
					Allocatable: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110")},
					Allocated:   corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10")},
				},
			},
		}
	}
	for _, tc := range []struct {
		name   string
		change func(c *clusterv1alpha1.Cluster)
		want   Change
	}{
		{"nothing", func(*clusterv1alpha1.Cluster) {}, Unchanged},
		{"kubernetes version", func(c *clusterv1alpha1.Cluster) { c.Status.KubernetesVersion = "v1.36.4" }, Unchanged},
		{"same quantity written differently", func(c *clusterv1alpha1.Cluster) {
			c.Status.ResourceSummary.Allocated[corev1.ResourcePods] = resource.MustParse("10.0")
		}, Unchanged},
		{"pods allocated", func(c *clusterv1alpha1.Cluster) {
			c.Status.ResourceSummary.Allocated[corev1.ResourcePods] = resource.MustParse("11")
		}, CapacityChanged},
		{"summary gone", func(c *clusterv1alpha1.Cluster) { c.Status.ResourceSummary = nil }, CapacityChanged},
		{"resource models", func(c *clusterv1alpha1.Cluster) { c.Spec.ResourceModels = grades() }, CapacityChanged},
		{"API list known complete", func(c *clusterv1alpha1.Cluster) {
			c.Status.Conditions = append(c.Status.Conditions, metav1.Condition{
				Type: clusterv1alpha1.ClusterConditionCompleteAPIEnablements, Status: metav1.ConditionTrue})
		}, PlacementChanged},
		{"label", func(c *clusterv1alpha1.Cluster) { c.Labels["env"] = "dev" }, PlacementChanged},
		{"region", func(c *clusterv1alpha1.Cluster) { c.Spec.Region = "us" }, PlacementChanged},
		{"zones", func(c *clusterv1alpha1.Cluster) { c.Spec.Zones = append(c.Spec.Zones, "eu-2") }, PlacementChanged},
		{"taint", func(c *clusterv1alpha1.Cluster) {
			c.Spec.Taints = []corev1.Taint{{Key: "maintenance", Effect: corev1.TaintEffectNoSchedule}}
		}, PlacementChanged},
		{"not ready", func(c *clusterv1alpha1.Cluster) {
			c.Status.Conditions[0].Status = metav1.ConditionFalse
			c.Status.Conditions[0].LastTransitionTime = metav1.NewTime(time.Unix(200, 0))
		}, PlacementChanged},
		{"ready and capacity", func(c *clusterv1alpha1.Cluster) {
			c.Status.Conditions[0].Status = metav1.ConditionUnknown
			c.Status.ResourceSummary = nil
		}, PlacementChanged},
		{"a CRD installed", func(c *clusterv1alpha1.Cluster) {
			c.Status.APIEnablements = append(c.Status.APIEnablements, clusterv1alpha1.APIEnablement{GroupVersion: "apps.kruise.io/v1alpha1",
				Resources: []clusterv1alpha1.APIResource{{Name: "clonesets", Kind: "CloneSet"}}})
		}, PlacementChanged},
		{"a kind gone", func(c *clusterv1alpha1.Cluster) { c.Status.APIEnablements[0].Resources = nil }, PlacementChanged},
		{"APIs no longer reported", func(c *clusterv1alpha1.Cluster) { c.Status.APIEnablements = nil }, PlacementChanged},
		{"being deleted", func(c *clusterv1alpha1.Cluster) { c.DeletionTimestamp = &metav1.Time{Time: time.Unix(300, 0)} }, PlacementChanged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, cur := base(), base()
			tc.change(cur)
			if got := ClusterChange(old, cur); got != tc.want {
				t.Errorf("ClusterChange = %d, want %d", got, tc.want)
			}
		})
	}
}
