package scheduler

import (
	"testing"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
)

// TestScheduleAffinityTermOrder: clusterAffinities are tried from the term the binding is on, then the terms after
// it, then those before it. A binding that fell back to a backup stays there while the backup can place it, but
// goes back to the primary once the backup fails too, rather than staying Unschedulable on a failed cluster.
func TestScheduleAffinityTermOrder(t *testing.T) {
	terms := func(names ...string) []policyv1alpha1.ClusterAffinityTerm {
		var out []policyv1alpha1.ClusterAffinityTerm
		for i := 0; i < len(names); i += 2 {
			out = append(out, policyv1alpha1.ClusterAffinityTerm{AffinityName: names[i],
				ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{names[i+1]}}})
		}
		return out
	}
	primaryBackup := &policyv1alpha1.Placement{ClusterAffinities: terms("primary", "a", "backup", "b"),
		ReplicaScheduling: dynamicWeights}
	threeTerms := &policyv1alpha1.Placement{ClusterAffinities: terms("first", "a", "second", "b", "third", "c"),
		ReplicaScheduling: dynamicWeights}
	runSchedule(t, []scheduleCase{
		{
			name: "on the backup, its cluster evicted by failover: back to the primary",
			in: Input{Placement: primaryBackup, Replicas: 2, Now: now, Settled: true,
				Clusters: []Cluster{cluster("a"), cluster("b", notReady)}, Previous: targets("b", 2),
				PreviousAffinity: "backup", Evicted: []string{"b"}},
			want: targets("a", 2), affinity: "primary",
		},
		{
			name: "on the backup, its cluster being deleted: back to the primary",
			in: Input{Placement: primaryBackup, Replicas: 2, Now: now, Settled: true,
				Clusters: []Cluster{cluster("a"), cluster("b", deleting)}, Previous: targets("b", 2),
				PreviousAffinity: "backup"},
			want: targets("a", 2), affinity: "primary",
		},
		{
			name: "on the backup, its cluster gone: back to the primary",
			in: Input{Placement: primaryBackup, Replicas: 2, Now: now, Settled: true,
				Clusters: []Cluster{cluster("a")}, Previous: targets("b", 2), PreviousAffinity: "backup"},
			want: targets("a", 2), affinity: "primary",
		},
		{
			name: "on the backup, the primary recovered: stays on the backup while it places the binding",
			in: Input{Placement: primaryBackup, Replicas: 2, Now: now,
				Clusters: []Cluster{cluster("a"), cluster("b")}, Previous: targets("b", 2), PreviousAffinity: "backup"},
			want: targets("b", 2), affinity: "backup",
		},
		{
			name: "on the second term, it fails: the third before the first",
			in: Input{Placement: threeTerms, Replicas: 2, Now: now,
				Clusters: []Cluster{cluster("a"), cluster("c")}, Previous: targets("b", 2), PreviousAffinity: "second"},
			want: targets("c", 2), affinity: "third",
		},
		{
			name: "on the third term, it fails: the first",
			in: Input{Placement: threeTerms, Replicas: 2, Now: now,
				Clusters: []Cluster{cluster("a"), cluster("b"), cluster("c", deleting)}, Previous: targets("c", 2),
				PreviousAffinity: "third"},
			want: targets("a", 2), affinity: "first",
		},
		{
			name: "no term fits: the error tells of every term, in the order tried",
			in: Input{Placement: primaryBackup, Replicas: 2, Now: now,
				Clusters: []Cluster{cluster("a", notReady), cluster("b", deleting)}, Previous: targets("b", 2),
				PreviousAffinity: "backup"},
			wantError: []string{"affinity backup: no cluster fits (a: not in clusterNames, b: being deleted); " +
				"affinity primary: no cluster fits (a: not ready, b: being deleted)"},
		},
	})
}
