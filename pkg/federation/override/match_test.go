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

// As Karmada's ClusterMatches: an affinity picks a cluster when every part that is set picks it and it is not
// excluded; nil, {} and parts set empty pick every cluster (a rule ported with `targetCluster: {}` applies
// everywhere).
func TestSelectsCluster(t *testing.T) {
	c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1", Labels: map[string]string{"env": "prod"}},
		Spec: clusterv1alpha1.ClusterSpec{Region: "eu"}}
	region := func(op corev1.NodeSelectorOperator, v string) *policyv1alpha1.FieldSelector {
		return &policyv1alpha1.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "region", Operator: op, Values: []string{v}}}}
	}
	for _, tc := range []struct {
		name     string
		affinity *policyv1alpha1.ClusterAffinity
		want     bool
		wantErr  bool
	}{
		{"nil", nil, true, false},
		{"empty", &policyv1alpha1.ClusterAffinity{}, true, false},
		{"empty lists", &policyv1alpha1.ClusterAffinity{ClusterNames: []string{}, ExcludeClusters: []string{}}, true, false},
		{"empty labelSelector", &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{}}, true, false},
		{"empty fieldSelector", &policyv1alpha1.ClusterAffinity{FieldSelector: &policyv1alpha1.FieldSelector{}}, true, false},
		{"named", &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member2", "member1"}}, true, false},
		{"not named", &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member2"}}, false, false},
		{"excluded", &policyv1alpha1.ClusterAffinity{ExcludeClusters: []string{"member1"}}, false, false},
		{"named and excluded", &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1"}, ExcludeClusters: []string{"member1"}}, false, false},
		{"labels match", &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}, true, false},
		{"labels differ", &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}}}, false, false},
		{"field matches", &policyv1alpha1.ClusterAffinity{FieldSelector: region(corev1.NodeSelectorOpIn, "eu")}, true, false},
		{"field differs", &policyv1alpha1.ClusterAffinity{FieldSelector: region(corev1.NodeSelectorOpNotIn, "eu")}, false, false},
		{"named, labels differ", &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1"},
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}}}, false, false},
		{"invalid labelSelector", &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Near"}}}}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := selectsCluster(tc.affinity, c)
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Errorf("selectsCluster = %v, %v; want %v, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
