package override

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
)

// As Karmada's matchZones: a cluster is In the listed zones only when all of its zones are listed.
func TestZoneInNeedsEveryZone(t *testing.T) {
	c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "m"}, Spec: clusterv1alpha1.ClusterSpec{Zones: []string{"z1", "z2"}}}
	a := &policyv1alpha1.ClusterAffinity{FieldSelector: &policyv1alpha1.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"z1"}}}}}
	if ok, err := selectsCluster(a, c); err != nil || ok {
		t.Errorf("targetCluster zone In [z1] selects a cluster in zones z1 and z2 (ok=%v err=%v); Karmada does not", ok, err)
	}
	a.FieldSelector.MatchExpressions[0].Values = []string{"z1", "z2"}
	if ok, err := selectsCluster(a, c); err != nil || !ok {
		t.Errorf("targetCluster zone In [z1 z2] does not select a cluster in zones z1 and z2 (ok=%v err=%v)", ok, err)
	}
}
