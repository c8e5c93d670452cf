package scheduler

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
)

// As Karmada's matchZones: a cluster is In the listed zones only when all of its zones are listed.
func TestPlacementZoneInNeedsEveryZone(t *testing.T) {
	c := NewCluster(&clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "m"}, Spec: clusterv1alpha1.ClusterSpec{Zones: []string{"z1", "z2"}}}, nil)
	a := &policyv1alpha1.ClusterAffinity{FieldSelector: &policyv1alpha1.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"z1"}}}}}
	if why := matchAffinity(a, &c); why == "" {
		t.Errorf("placement clusterAffinity zone In [z1] admits a cluster in zones z1 and z2; Karmada does not")
	}
	a.FieldSelector.MatchExpressions[0].Values = []string{"z2", "z1"}
	if why := matchAffinity(a, &c); why != "" {
		t.Errorf("placement clusterAffinity zone In [z2 z1] refuses a cluster in zones z1 and z2: %s", why)
	}
}
