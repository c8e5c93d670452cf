package scheduling

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

// A binding with clusterAffinities [primary, backup] that failed over to the backup goes back to the primary, once
// ready again, when failover takes it off the backup in turn; while the backup is ready it stays there.
func TestDecideAffinityFallsBackToAnEarlierTerm(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	notReadySince := func(name string, since time.Time) clusterv1alpha1.Cluster {
		c := readyCluster(name)
		c.Status.Conditions[0].Status, c.Status.Conditions[0].LastTransitionTime = metav1.ConditionFalse, metav1.NewTime(since)
		return c
	}
	spec := &workv1alpha1.ResourceBindingSpec{
		Resource: workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "api"},
		Replicas: 3,
		Placement: &policyv1alpha1.Placement{
			ClusterAffinities: []policyv1alpha1.ClusterAffinityTerm{
				{AffinityName: "primary", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1"}}},
				{AffinityName: "backup", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member2"}}},
			},
			ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
				ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
				ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
			},
		},
		Failover: &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: policyv1alpha1.PurgeModeDirectly}},
		Clusters: []workv1alpha1.TargetCluster{{Name: "member2", Replicas: 3}},
	}
	status := &workv1alpha1.ResourceBindingStatus{SchedulerObservedAffinityName: "backup"}
	for _, tc := range []struct {
		name        string
		member2     clusterv1alpha1.Cluster
		wantEvicted []string
		want        workv1alpha1.TargetCluster
		affinity    string
	}{
		{name: "the backup not ready past its toleration: back to the primary",
			member2: notReadySince("member2", now.Add(-10*time.Minute)), wantEvicted: []string{"member2"},
			want: workv1alpha1.TargetCluster{Name: "member1", Replicas: 3}, affinity: "primary"},
		{name: "the backup ready: it stays there",
			member2: readyCluster("member2"),
			want:    workv1alpha1.TargetCluster{Name: "member2", Replicas: 3}, affinity: "backup"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clusters := []clusterv1alpha1.Cluster{readyCluster("member1"), tc.member2}
			d := decide(spec, status, memory{settled: true}, clusters, now, 0)
			if d.err != nil {
				t.Fatalf("unschedulable: %v", d.err)
			}
			if !slices.Equal(d.evicted, tc.wantEvicted) {
				t.Errorf("evicted %v, want %v", d.evicted, tc.wantEvicted)
			}
			if len(d.result.Clusters) != 1 || d.result.Clusters[0] != tc.want || d.result.AffinityName != tc.affinity {
				t.Errorf("placed %v on %q, want %v on %q", d.result.Clusters, d.result.AffinityName, tc.want, tc.affinity)
			}
		})
	}
}
