package scheduler

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
)

// TestScheduleAffinityTermOrder: clusterAffinities are tried from the term the binding is on, then the terms after
// it, then those before it. A binding that fell back to a backup stays there while the backup can place it, but
// goes back to the primary once the backup fails too, rather than staying Unschedulable on a failed cluster. A
// first term whose spread search is hopeless does not starve a later one of the tries it needs.
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
	hopelessThenFits, hopelessClusters := hopelessFirstTerm()
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
			name: "the first term's spread search tries all it may and fails: the second, placed on its second choice of regions, still gets its tries",
			in:   Input{Placement: hopelessThenFits, Replicas: 2, Now: now, Clusters: hopelessClusters},
			want: targets("z00", 2, "z01", 2, "z02", 2, "z03", 2, "z05", 2), affinity: "second",
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

// hopelessFirstTerm is a placement of two terms under spread constraints of 5 regions and 2 values of label b:
// the first term's 30 regions are all b=1 (each of their 142506 choices of 5 fails), the second's 6 regions have
// one b=2, so its first choice of 5 fails and its second fits.
func hopelessFirstTerm() (*policyv1alpha1.Placement, []Cluster) {
	var clusters []Cluster
	for i := range 30 {
		clusters = append(clusters, cluster(fmt.Sprintf("a%02d", i), free(5),
			withLabels("term", "first", "region", fmt.Sprint("r", i), "b", "1")))
	}
	for i := range 6 {
		b := "1"
		if i == 5 {
			b = "2"
		}
		clusters = append(clusters, cluster(fmt.Sprintf("z%02d", i), free(5),
			withLabels("term", "second", "region", fmt.Sprint("s", i), "b", b)))
	}
	term := func(name string) policyv1alpha1.ClusterAffinityTerm {
		return policyv1alpha1.ClusterAffinityTerm{AffinityName: name, ClusterAffinity: policyv1alpha1.ClusterAffinity{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"term": name}}}}
	}
	return &policyv1alpha1.Placement{ClusterAffinities: []policyv1alpha1.ClusterAffinityTerm{term("first"), term("second")},
		SpreadConstraints: []policyv1alpha1.SpreadConstraint{{SpreadByLabel: "region", MinGroups: 5, MaxGroups: 5},
			{SpreadByLabel: "b", MinGroups: 2}}}, clusters
}
