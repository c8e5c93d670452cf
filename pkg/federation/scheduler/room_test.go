package scheduler

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
)

// Result.NoRoom: the clusters a duplicated binding was left off for room alone, whose freed room may place it.
func TestScheduleNoRoom(t *testing.T) {
	equal := &policyv1alpha1.Placement{ReplicaScheduling: divided(policyv1alpha1.ReplicaDivisionPreferenceWeighted, nil)}
	for _, tc := range []struct {
		name   string
		in     Input
		noRoom []string
	}{
		{"duplicated, two full clusters", Input{Replicas: 3, Clusters: []Cluster{cluster("c", free(2)), cluster("a", free(3)), cluster("b", free(0))}},
			[]string{"b", "c"}},
		{"room not known", Input{Replicas: 3, Clusters: []Cluster{cluster("a"), cluster("b")}}, nil},
		{"full and not ready: room alone would not place it", Input{Replicas: 3,
			Clusters: []Cluster{cluster("a"), cluster("b", free(1), notReady)}}, nil},
		{"full and not selected", Input{Replicas: 3, Clusters: []Cluster{cluster("a"), cluster("b", free(1))},
			Placement: &policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"a"}}}}, nil},
		{"full, but a target already", Input{Replicas: 3, Clusters: []Cluster{cluster("a"), cluster("b", free(1))},
			Previous: targets("a", 3, "b", 3)}, nil},
		{"no replicas: nothing to make room for", Input{Clusters: []Cluster{cluster("a"), cluster("b", free(0))}}, nil},
		{"divided: a cluster takes what room it has", Input{Replicas: 3, Placement: equal,
			Clusters: []Cluster{cluster("a", free(5)), cluster("b", free(1))}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Schedule(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.noRoom, got.NoRoom); diff != "" {
				t.Errorf("NoRoom (-want +got):\n%s", diff)
			}
		})
	}
}
