package scheduler

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

// TestScheduleClosedClusters: a cluster the binding's divided replicas are on that no longer passes the filters
// (not ready, or tainted NoSchedule/NoExecute untolerated) keeps the replicas it has, but a scale-up, or the
// replicas of a cluster left, go only to the clusters that pass them; a scale-down takes from any.
func TestScheduleClosedClusters(t *testing.T) {
	notReadyTaint := taint(corev1.Taint{Key: NotReadyTaintKey, Effect: corev1.TaintEffectNoSchedule})
	unreachableTaint := taint(corev1.Taint{Key: UnreachableTaintKey, Effect: corev1.TaintEffectNoExecute})
	equal := &policyv1alpha1.Placement{ReplicaScheduling: divided(policyv1alpha1.ReplicaDivisionPreferenceWeighted, nil)}
	runSchedule(t, []scheduleCase{
		{
			name: "equal weights, scale-up: the not-ready cluster keeps 2, the new replicas go to the ready one",
			in: Input{Replicas: 6, Clusters: []Cluster{cluster("a", notReady), cluster("b")}, Previous: targets("a", 2, "b", 2),
				Placement: equal},
			want: targets("a", 2, "b", 4),
		},
		{
			name: "settled, scale-up: the same",
			in: Input{Replicas: 6, Clusters: []Cluster{cluster("a", notReady), cluster("b")}, Previous: targets("a", 2, "b", 2),
				Settled: true, Placement: equal},
			want: targets("a", 2, "b", 4),
		},
		{
			name: "static weights 2:1 scaled from 6 to 9, the heavier cluster tainted not-ready",
			in: Input{Replicas: 9, Clusters: []Cluster{cluster("a", notReadyTaint), cluster("b")}, Previous: targets("a", 4, "b", 2),
				Placement: &policyv1alpha1.Placement{ReplicaScheduling: static("a", 2, "b", 1)}},
			want: targets("a", 4, "b", 5),
		},
		{
			name: "static weights: the open clusters have none, so they weigh the same",
			in: Input{Replicas: 7, Clusters: []Cluster{cluster("a", notReady), cluster("b"), cluster("c")}, Previous: targets("a", 3),
				Placement: &policyv1alpha1.Placement{ReplicaScheduling: static("a", 1)}},
			want: targets("a", 3, "b", 2, "c", 2),
		},
		{
			name: "a tolerated NoSchedule taint leaves the cluster open",
			in: Input{Replicas: 6, Clusters: []Cluster{cluster("a", notReadyTaint), cluster("b")}, Previous: targets("a", 2, "b", 2),
				Placement: &policyv1alpha1.Placement{ReplicaScheduling: equal.ReplicaScheduling,
					ClusterTolerations: []corev1.Toleration{{Key: NotReadyTaintKey, Operator: corev1.TolerationOpExists}}}},
			want: targets("a", 3, "b", 3),
		},
		{
			name: "dynamic weights, scale-up: the room of a not-ready cluster draws nothing",
			in: Input{Replicas: 8, Clusters: []Cluster{cluster("a", notReady, free(10)), cluster("b", free(10))},
				Previous: targets("a", 2, "b", 2), Placement: &policyv1alpha1.Placement{ReplicaScheduling: dynamicWeights}},
			want: targets("a", 2, "b", 6),
		},
		{
			name: "dynamic weights, scale-up: the open clusters' room is what counts",
			in: Input{Replicas: 8, Clusters: []Cluster{cluster("a", notReady, free(10)), cluster("b", free(1))},
				Previous: targets("a", 2, "b", 2), Placement: &policyv1alpha1.Placement{ReplicaScheduling: dynamicWeights}},
			wantError: []string{"the clusters have room for 1 more replicas, 4 are needed", "a: not ready, keeps its 2 replicas"},
		},
		{
			name: "aggregated, scale-up: an unreachable cluster in use is not filled first",
			in: Input{Replicas: 8, Clusters: []Cluster{cluster("a", unreachableTaint, free(10)), cluster("b", free(10))},
				Previous: targets("a", 3), Placement: &policyv1alpha1.Placement{ReplicaScheduling: aggregate}},
			want: targets("a", 3, "b", 5),
		},
		{
			name: "scale-up with no open cluster: unschedulable, and says why",
			in: Input{Replicas: 4, Clusters: []Cluster{cluster("a", notReady)}, Previous: targets("a", 2),
				Placement: equal},
			wantError: []string{"no cluster takes the 2 new replicas (a: not ready, keeps its 2 replicas)"},
		},
		{
			name: "settled, a cluster being deleted: its replicas go to the ready cluster",
			in: Input{Replicas: 6, Clusters: []Cluster{cluster("a", notReady), cluster("b"), cluster("c", deleting)},
				Previous: targets("a", 2, "b", 2, "c", 2), Settled: true, Placement: equal},
			want: targets("a", 2, "b", 4),
		},
		{
			name: "scale-down takes from the not-ready cluster too",
			in: Input{Replicas: 4, Clusters: []Cluster{cluster("a", notReady), cluster("b")}, Previous: targets("a", 3, "b", 3),
				Placement: equal},
			want: targets("a", 2, "b", 2),
		},
		{
			name: "aggregated scale-down empties the smallest, closed or not",
			in: Input{Replicas: 4, Clusters: []Cluster{cluster("a", notReady), cluster("b")}, Previous: targets("a", 2, "b", 4),
				Placement: &policyv1alpha1.Placement{ReplicaScheduling: aggregate}},
			want: targets("b", 4),
		},
		{
			name: "steady, settled: the not-ready cluster's replicas stay where they are",
			in: Input{Replicas: 4, Clusters: []Cluster{cluster("a", notReady, notReadyTaint), cluster("b")}, Previous: targets("a", 2, "b", 2),
				Settled: true, Placement: &policyv1alpha1.Placement{ReplicaScheduling: static("a", 3, "b", 1)}},
			want: targets("a", 2, "b", 2),
		},
		{
			name: "steady, placement changed toward the not-ready cluster: it gets no more",
			in: Input{Replicas: 4, Clusters: []Cluster{cluster("a", notReady), cluster("b")}, Previous: targets("a", 2, "b", 2),
				Placement: &policyv1alpha1.Placement{ReplicaScheduling: static("a", 3, "b", 1)}},
			want: targets("a", 2, "b", 2),
		},
		{
			name: "steady, dynamic weights: nothing moves",
			in: Input{Replicas: 4, Clusters: []Cluster{cluster("a", notReady, free(10)), cluster("b", free(0))},
				Previous: targets("a", 2, "b", 2), Placement: &policyv1alpha1.Placement{ReplicaScheduling: dynamicWeights}},
			want: targets("a", 2, "b", 2),
		},
	})
}

// TestScheduleClosedClustersQuick checks, for random divided placements, previous results and closed clusters,
// what any result must do: hold every replica, give no closed cluster more than it had, and, settled with the
// replicas unchanged, move nothing.
func TestScheduleClosedClustersQuick(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	strategies := []*policyv1alpha1.ReplicaSchedulingStrategy{
		divided(policyv1alpha1.ReplicaDivisionPreferenceWeighted, nil), static("c0", 3, "c1", 1, "c2", 2), dynamicWeights, aggregate,
	}
	for range 3000 {
		var clusters []Cluster
		var previous []workv1alpha1.TargetCluster
		var sum int32
		closed := map[string]bool{}
		for i := range 1 + rng.IntN(4) {
			name := fmt.Sprintf("c%d", i)
			var opts []func(*Cluster)
			if rng.IntN(3) == 0 {
				opts = append(opts, notReady)
				closed[name] = true
			}
			if rng.IntN(2) == 0 {
				opts = append(opts, free(rng.Int32N(20)))
			}
			clusters = append(clusters, cluster(name, opts...))
			if rng.IntN(2) == 0 {
				r := 1 + rng.Int32N(5)
				previous = append(previous, workv1alpha1.TargetCluster{Name: name, Replicas: r})
				sum += r
			}
		}
		in := Input{Replicas: 1 + rng.Int32N(20), Clusters: clusters, Previous: previous,
			Placement: &policyv1alpha1.Placement{ReplicaScheduling: strategies[rng.IntN(len(strategies))]}}
		what := fmt.Sprintf("%d replicas on %d clusters (closed %v), previous %v, %+v", in.Replicas, len(clusters), closed,
			previous, *in.Placement.ReplicaScheduling)
		got, err := Schedule(in)
		if err != nil {
			continue // no room, or no open cluster for the new replicas
		}
		had := map[string]int32{}
		for _, p := range previous {
			had[p.Name] = p.Replicas
		}
		var total int32
		for _, c := range got.Clusters {
			total += c.Replicas
			if closed[c.Name] && c.Replicas > had[c.Name] {
				t.Fatalf("%s: closed %s got %d, had %d: %v", what, c.Name, c.Replicas, had[c.Name], got.Clusters)
			}
		}
		if total != in.Replicas {
			t.Fatalf("%s: %v holds %d replicas", what, got.Clusters, total)
		}
		if len(previous) > 0 {
			in.Replicas, in.Settled = sum, true
			if steady, err := Schedule(in); err != nil || !cmp.Equal(steady.Clusters, previous) {
				t.Fatalf("%s: settled with the replicas unchanged, got %v, %v", what, steady.Clusters, err)
			}
		}
	}
}
