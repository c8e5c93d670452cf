package selector

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
)

func TestClusterFieldsMatch(t *testing.T) {
	multiZone := ClusterFields{Provider: "aws", Region: "eu", Zones: []string{"z1", "z2"}}
	bare := ClusterFields{}
	in := func(key string, values ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
	}
	notIn := func(key string, values ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpNotIn, Values: values}
	}
	for _, tc := range []struct {
		name    string
		fields  ClusterFields
		expr    corev1.NodeSelectorRequirement
		want    bool
		wantErr bool
	}{
		{"zone In lists every zone", multiZone, in("zone", "z1", "z2", "z3"), true, false},
		{"zone In lists only some zones", multiZone, in("zone", "z1"), false, false},
		{"zone In lists none", multiZone, in("zone", "z3"), false, false},
		{"zone In, cluster without zones", bare, in("zone", "z1"), false, false},
		{"zone NotIn lists none", multiZone, notIn("zone", "z3"), true, false},
		{"zone NotIn lists one", multiZone, notIn("zone", "z2", "z3"), false, false},
		{"zone NotIn, cluster without zones", bare, notIn("zone", "z1"), true, false},
		{"provider In", multiZone, in("provider", "aws", "gcp"), true, false},
		{"provider In, other", multiZone, in("provider", "gcp"), false, false},
		{"provider In, none set", bare, in("provider", "aws"), false, false},
		{"provider NotIn, none set", bare, notIn("provider", "aws"), true, false},
		{"region NotIn", multiZone, notIn("region", "eu"), false, false},
		{"region In", multiZone, in("region", "eu"), true, false},
		{"unknown key", multiZone, in("rack", "r1"), false, true},
		{"unknown operator", multiZone, corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpExists}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.fields.Match(tc.expr)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("Match(%v) = %v, %v; want %v, error %v", tc.expr, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestClusterFieldsOf(t *testing.T) {
	f := ClusterFieldsOf(&clusterv1alpha1.Cluster{Spec: clusterv1alpha1.ClusterSpec{Provider: "aws", Region: "eu",
		Zone: "z1", Zones: []string{"z1", "z2"}}})
	if f.Provider != "aws" || f.Region != "eu" || len(f.Zones) != 2 || f.Zones[0] != "z1" || f.Zones[1] != "z2" {
		t.Errorf("ClusterFieldsOf = %+v, want aws, eu, zones [z1 z2]", f)
	}
}
