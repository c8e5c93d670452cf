package scheduler

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// cluster is a ready cluster with unknown room, changed by opts.
func cluster(name string, opts ...func(*Cluster)) Cluster {
	c := Cluster{Name: name, Ready: metav1.ConditionTrue}
	for _, o := range opts {
		o(&c)
	}
	return c
}

func region(r string) func(*Cluster)   { return func(c *Cluster) { c.Region = r } }
func provider(p string) func(*Cluster) { return func(c *Cluster) { c.Provider = p } }
func zones(z ...string) func(*Cluster) { return func(c *Cluster) { c.Zones = z } }
func notReady(c *Cluster)              { c.Ready = metav1.ConditionFalse }
func deleting(c *Cluster)              { c.Deleting = true }
func free(n int32) func(*Cluster) {
	return func(c *Cluster) { c.Available, c.AvailableKnown = n, true }
}
func taint(t corev1.Taint) func(*Cluster) { return func(c *Cluster) { c.Taints = append(c.Taints, t) } }
func withLabels(kv ...string) func(*Cluster) {
	return func(c *Cluster) {
		c.Labels = map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			c.Labels[kv[i]] = kv[i+1]
		}
	}
}

// targets builds a result from name, replicas pairs.
func targets(kv ...any) []workv1alpha1.TargetCluster {
	var out []workv1alpha1.TargetCluster
	for i := 0; i < len(kv); i += 2 {
		out = append(out, workv1alpha1.TargetCluster{Name: kv[i].(string), Replicas: int32(kv[i+1].(int))})
	}
	return out
}

func divided(pref policyv1alpha1.ReplicaDivisionPreference, wp *policyv1alpha1.ClusterPreferences) *policyv1alpha1.ReplicaSchedulingStrategy {
	return &policyv1alpha1.ReplicaSchedulingStrategy{
		ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
		ReplicaDivisionPreference: pref,
		WeightPreference:          wp,
	}
}

func static(kv ...any) *policyv1alpha1.ReplicaSchedulingStrategy {
	var list []policyv1alpha1.StaticClusterWeight
	for i := 0; i < len(kv); i += 2 {
		list = append(list, policyv1alpha1.StaticClusterWeight{
			TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{kv[i].(string)}},
			Weight:        int64(kv[i+1].(int)),
		})
	}
	return divided(policyv1alpha1.ReplicaDivisionPreferenceWeighted, &policyv1alpha1.ClusterPreferences{StaticWeightList: list})
}

var (
	dynamicWeights = divided(policyv1alpha1.ReplicaDivisionPreferenceWeighted,
		&policyv1alpha1.ClusterPreferences{DynamicWeight: policyv1alpha1.DynamicWeightByAvailableReplicas})
	aggregate = divided(policyv1alpha1.ReplicaDivisionPreferenceAggregated, nil)
)

// scheduleCase is one case of a Schedule table: the result wanted, or substrings of the error.
type scheduleCase struct {
	name      string
	in        Input
	want      []workv1alpha1.TargetCluster
	affinity  string
	wantError []string
}

func TestSchedule(t *testing.T) {
	abc := []Cluster{cluster("a"), cluster("b"), cluster("c")}
	tests := []scheduleCase{
		{
			name: "no placement: every ready cluster, all replicas",
			in:   Input{Replicas: 3, Clusters: []Cluster{cluster("a"), cluster("b"), cluster("c", notReady)}},
			want: targets("a", 3, "b", 3),
		},
		{
			name: "clusterNames and exclude",
			in: Input{Replicas: 2, Clusters: abc, Placement: &policyv1alpha1.Placement{
				ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"a", "b"}, ExcludeClusters: []string{"a"}},
			}},
			want: targets("b", 2),
		},
		{
			name: "labelSelector",
			in: Input{Clusters: []Cluster{cluster("a", withLabels("env", "prod")), cluster("b", withLabels("env", "dev"))},
				Placement: &policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}},
				}}},
			want: targets("a", 0),
		},
		{
			name: "fieldSelector: region In, provider NotIn, zone In listing every one of the cluster's zones",
			in: Input{Replicas: 1, Clusters: []Cluster{
				cluster("a", region("eu"), provider("aws"), zones("z1", "z2")),
				cluster("b", region("eu"), provider("gcp"), zones("z2")),
				cluster("c", region("us"), provider("aws"), zones("z2")),
				cluster("d", region("eu"), provider("aws"), zones("z3")),
			}, Placement: &policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{
				FieldSelector: &policyv1alpha1.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: "region", Operator: corev1.NodeSelectorOpIn, Values: []string{"eu"}},
					{Key: "provider", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"gcp"}},
					{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"z1", "z2"}},
				}},
			}}},
			want: targets("a", 1),
		},
		{
			name: "settled static weights: a cluster back after failover stays empty",
			in: Input{Replicas: 4, Clusters: []Cluster{cluster("a"), cluster("b")}, Settled: true, Previous: targets("a", 4),
				Placement: &policyv1alpha1.Placement{ReplicaScheduling: static("a", 1, "b", 1)}},
			want: targets("a", 4),
		},
		{
			name: "not settled (placement changed): static weights divide afresh",
			in: Input{Replicas: 4, Clusters: []Cluster{cluster("a"), cluster("b")}, Previous: targets("a", 4),
				Placement: &policyv1alpha1.Placement{ReplicaScheduling: static("a", 1, "b", 1)}},
			want: targets("a", 2, "b", 2),
		},
		{
			name: "settled, but replicas changed: divided afresh",
			in: Input{Replicas: 6, Clusters: []Cluster{cluster("a"), cluster("b")}, Settled: true, Previous: targets("a", 4),
				Placement: &policyv1alpha1.Placement{ReplicaScheduling: static("a", 1, "b", 1)}},
			want: targets("a", 3, "b", 3),
		},
		{
			name: "settled, but a cluster of it evicted: divided afresh",
			in: Input{Replicas: 4, Clusters: []Cluster{cluster("a"), cluster("b"), cluster("c")}, Settled: true,
				Previous: targets("a", 2, "b", 2), Evicted: []string{"b"},
				Placement: &policyv1alpha1.Placement{ReplicaScheduling: static("a", 1, "b", 1, "c", 1)}},
			want: targets("a", 2, "c", 2),
		},
		{
			name: "settled, but a cluster of it no longer matches the affinity: divided afresh",
			in: Input{Replicas: 4, Clusters: []Cluster{cluster("a", withLabels("env", "prod")), cluster("b", withLabels("env", "dev")), cluster("c", withLabels("env", "prod"))},
				Settled: true, Previous: targets("a", 2, "b", 2),
				Placement: &policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}, ReplicaScheduling: divided(policyv1alpha1.ReplicaDivisionPreferenceWeighted, nil)}},
			want: targets("a", 2, "c", 2),
		},
		{
			name: "settled, but a cluster of it is being deleted: divided afresh",
			in: Input{Replicas: 4, Clusters: []Cluster{cluster("a"), cluster("b", deleting)}, Settled: true, Previous: targets("a", 2, "b", 2),
				Placement: &policyv1alpha1.Placement{ReplicaScheduling: static("a", 1, "b", 1)}},
			want: targets("a", 4),
		},
		{
			name: "settled duplicated: follows the clusters",
			in:   Input{Replicas: 2, Clusters: []Cluster{cluster("a"), cluster("b")}, Settled: true, Previous: targets("a", 2)},
			want: targets("a", 2, "b", 2),
		},
		{
			name: "a not-ready cluster takes nothing new but keeps what it has",
			in: Input{Replicas: 2, Clusters: []Cluster{cluster("a", notReady), cluster("b", notReady), cluster("c")},
				Previous: targets("a", 2)},
			want: targets("a", 2, "c", 2),
		},
		{
			name: "NoSchedule taint: untolerated keeps new work off, tolerated does not, existing stays",
			in: Input{Clusters: []Cluster{
				cluster("a", taint(corev1.Taint{Key: "gpu", Effect: corev1.TaintEffectNoSchedule})),
				cluster("b", taint(corev1.Taint{Key: "maint", Effect: corev1.TaintEffectNoSchedule})),
				cluster("c", taint(corev1.Taint{Key: "maint", Effect: corev1.TaintEffectNoSchedule})),
			}, Previous: targets("c", 0), Placement: &policyv1alpha1.Placement{ClusterTolerations: []corev1.Toleration{
				{Key: "gpu", Operator: corev1.TolerationOpExists},
			}}},
			want: targets("a", 0, "c", 0),
		},
		{
			name: "a NoExecute toleration that ran out no longer lets new work in",
			in: Input{Now: now, Clusters: []Cluster{
				cluster("a", taint(corev1.Taint{Key: "x", Effect: corev1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: now.Add(-10 * time.Second)}})),
				cluster("b", taint(corev1.Taint{Key: "y", Effect: corev1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: now.Add(-10 * time.Second)}})),
			}, Placement: &policyv1alpha1.Placement{ClusterTolerations: []corev1.Toleration{
				{Key: "x", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(5)},
				{Key: "y", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(60)},
			}}},
			want: targets("b", 0),
		},
		{
			name: "clusterAffinities: the first term that fits",
			in: Input{Clusters: []Cluster{cluster("a", notReady), cluster("b")}, Placement: &policyv1alpha1.Placement{
				ClusterAffinities: []policyv1alpha1.ClusterAffinityTerm{
					{AffinityName: "primary", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"a"}}},
					{AffinityName: "backup", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"b"}}},
				}}},
			want: targets("b", 0), affinity: "backup",
		},
		{
			name: "clusterAffinities: a binding on the backup stays there when the primary recovers",
			in: Input{Clusters: []Cluster{cluster("a"), cluster("b")}, Previous: targets("b", 0), PreviousAffinity: "backup",
				Placement: &policyv1alpha1.Placement{ClusterAffinities: []policyv1alpha1.ClusterAffinityTerm{
					{AffinityName: "primary", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"a"}}},
					{AffinityName: "backup", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"b"}}},
				}}},
			want: targets("b", 0), affinity: "backup",
		},
		{
			name: "clusterAffinities: no term fits, each says why",
			in: Input{Clusters: []Cluster{cluster("a", notReady), cluster("b", withLabels("env", "dev"))}, Placement: &policyv1alpha1.Placement{
				ClusterAffinities: []policyv1alpha1.ClusterAffinityTerm{
					{AffinityName: "primary", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"a"}}},
					{AffinityName: "backup", ClusterAffinity: policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}},
				}}},
			wantError: []string{"affinity primary: no cluster fits (a: not ready, b: not in clusterNames)",
				"affinity backup: no cluster fits (a: labels do not match labelSelector, b: labels do not match labelSelector)"},
		},
		{
			name: "spread by region: too few regions",
			in: Input{Clusters: []Cluster{cluster("a", region("eu")), cluster("b", region("eu"))}, Placement: &policyv1alpha1.Placement{
				SpreadConstraints: []policyv1alpha1.SpreadConstraint{{SpreadByField: policyv1alpha1.SpreadByFieldRegion, MinGroups: 2}}}},
			wantError: []string{"spread by region needs at least 2 groups, the fitting clusters are in 1"},
		},
		{
			name: "spread by region: one region, the one already used; clusters without a region are out",
			in: Input{Clusters: []Cluster{cluster("a", region("eu")), cluster("b", region("us")), cluster("c", region("us")), cluster("d")},
				Previous: targets("a", 0), Placement: &policyv1alpha1.Placement{
					SpreadConstraints: []policyv1alpha1.SpreadConstraint{{SpreadByField: policyv1alpha1.SpreadByFieldRegion, MaxGroups: 1}}}},
			want: targets("a", 0),
		},
		{
			name: "spread by region: without history the region with more room wins",
			in: Input{Replicas: 1, Clusters: []Cluster{cluster("a", region("eu"), free(5)), cluster("b", region("us"), free(3)), cluster("c", region("us"), free(3))},
				Placement: &policyv1alpha1.Placement{
					SpreadConstraints: []policyv1alpha1.SpreadConstraint{{SpreadByField: policyv1alpha1.SpreadByFieldRegion, MaxGroups: 1}}}},
			want: targets("b", 1, "c", 1),
		},
		{
			name: "spread by label, then by cluster: at most 2 clusters",
			in: Input{Clusters: []Cluster{cluster("a", withLabels("dc", "x"), free(1)), cluster("b", withLabels("dc", "y"), free(9)),
				cluster("c", withLabels("dc", "y"), free(8)), cluster("d", withLabels("dc", "y"), free(7))},
				Placement: &policyv1alpha1.Placement{SpreadConstraints: []policyv1alpha1.SpreadConstraint{
					{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MaxGroups: 2},
					{SpreadByLabel: "dc", MaxGroups: 1},
				}}},
			want: targets("b", 0, "c", 0),
		},
		{
			name: "spread by region and by cluster: the cut keeps the regions the region constraint needs",
			in: Input{Clusters: []Cluster{cluster("a1", region("a"), free(9)), cluster("a2", region("a"), free(8)), cluster("b1", region("b"), free(1))},
				Placement: &policyv1alpha1.Placement{SpreadConstraints: []policyv1alpha1.SpreadConstraint{
					{SpreadByField: policyv1alpha1.SpreadByFieldRegion, MinGroups: 2, MaxGroups: 2},
					{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MaxGroups: 2},
				}}},
			want: targets("a1", 0, "b1", 0),
		},
		{
			name: "spread by cluster allowing fewer clusters than the regions needed",
			in: Input{Clusters: []Cluster{cluster("a1", region("a")), cluster("b1", region("b")), cluster("c1", region("c"))},
				Placement: &policyv1alpha1.Placement{SpreadConstraints: []policyv1alpha1.SpreadConstraint{
					{SpreadByField: policyv1alpha1.SpreadByFieldRegion, MinGroups: 3},
					{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MaxGroups: 2},
				}}},
			wantError: []string{"spread by cluster allows at most 2 clusters, too few to cover the groups the other spread constraints need (3 found)"},
		},
		{
			name: "spread by provider, region and cluster: two clusters cover both providers and both regions",
			in: Input{Clusters: []Cluster{cluster("c1", provider("p1"), region("r1"), free(9)), cluster("c2", provider("p1"), region("r2"), free(8)),
				cluster("c3", provider("p2"), region("r1"), free(7)), cluster("c4", provider("p2"), region("r2"), free(6))},
				Placement: &policyv1alpha1.Placement{SpreadConstraints: []policyv1alpha1.SpreadConstraint{
					{SpreadByField: policyv1alpha1.SpreadByFieldProvider, MinGroups: 2, MaxGroups: 2},
					{SpreadByField: policyv1alpha1.SpreadByFieldRegion, MinGroups: 2, MaxGroups: 2},
					{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MaxGroups: 2},
				}}},
			want: targets("c1", 0, "c4", 0),
		},
		{
			name: "spread by region and by cluster: the region with room has one cluster, the other the two wanted",
			in: Input{Replicas: 2, Clusters: []Cluster{cluster("a", region("r1"), free(100)), cluster("b", region("r2"), free(10)), cluster("c", region("r2"), free(10))},
				Placement: &policyv1alpha1.Placement{SpreadConstraints: []policyv1alpha1.SpreadConstraint{
					{SpreadByField: policyv1alpha1.SpreadByFieldRegion, MaxGroups: 1},
					{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MinGroups: 2},
				}}},
			want: targets("b", 2, "c", 2),
		},
		{
			name: "spread by provider, region, zone and 2 clusters: the roomiest cluster would take a place two others need",
			in: Input{Clusters: []Cluster{cluster("a", provider("p1"), region("r1"), zones("z1"), free(100)),
				cluster("x", provider("p2"), region("r1"), zones("z2"), free(10)), cluster("y", provider("p1"), region("r2"), zones("z1"), free(10))},
				Placement: &policyv1alpha1.Placement{SpreadConstraints: []policyv1alpha1.SpreadConstraint{
					{SpreadByField: policyv1alpha1.SpreadByFieldProvider, MinGroups: 2},
					{SpreadByField: policyv1alpha1.SpreadByFieldRegion, MinGroups: 2},
					{SpreadByField: policyv1alpha1.SpreadByFieldZone, MinGroups: 2},
					{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MinGroups: 2, MaxGroups: 2},
				}}},
			want: targets("x", 0, "y", 0),
		},
		{
			name: "spread by zone, then by region: the region chosen must keep the zones wanted, whatever the order",
			in: Input{Clusters: []Cluster{cluster("a", region("r1"), zones("z1"), free(100)), cluster("b", region("r2"), zones("z2"), free(10)),
				cluster("c", region("r2"), zones("z3"), free(10))},
				Placement: &policyv1alpha1.Placement{SpreadConstraints: []policyv1alpha1.SpreadConstraint{
					{SpreadByField: policyv1alpha1.SpreadByFieldZone, MinGroups: 2},
					{SpreadByField: policyv1alpha1.SpreadByFieldRegion, MaxGroups: 1},
				}}},
			want: targets("b", 0, "c", 0),
		},
		{
			name: "spread by region, then by zone: no region choice has the zones wanted; the preferred one's error",
			in: Input{Clusters: []Cluster{cluster("a", region("r1"), zones("z1"), free(9)), cluster("b", region("r2"), zones("z2"), free(8))},
				Placement: &policyv1alpha1.Placement{SpreadConstraints: []policyv1alpha1.SpreadConstraint{
					{SpreadByField: policyv1alpha1.SpreadByFieldRegion, MaxGroups: 1},
					{SpreadByField: policyv1alpha1.SpreadByFieldZone, MinGroups: 2},
				}}},
			wantError: []string{"spread by zone needs at least 2 groups, the fitting clusters are in 1"},
		},
		{
			name: "spread by cluster: at least 3",
			in: Input{Clusters: []Cluster{cluster("a"), cluster("b")}, Placement: &policyv1alpha1.Placement{
				SpreadConstraints: []policyv1alpha1.SpreadConstraint{{MinGroups: 3}}}},
			wantError: []string{"spread by cluster needs at least 3 clusters, only 2 fit"},
		},
		{
			name: "duplicated: a new cluster without room for all replicas is out",
			in: Input{Replicas: 4, Clusters: []Cluster{cluster("a", free(3)), cluster("b", free(4)), cluster("c")},
				Placement: &policyv1alpha1.Placement{ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
					ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDuplicated}}},
			want: targets("b", 4, "c", 4),
		},
		{
			name: "static weights 2:1",
			in:   Input{Replicas: 6, Clusters: abc, Placement: &policyv1alpha1.Placement{ReplicaScheduling: static("a", 2, "b", 1)}},
			want: targets("a", 4, "b", 2),
		},
		{
			name: "static weights 2:1 scaled to 9",
			in: Input{Replicas: 9, Clusters: abc, Previous: targets("a", 4, "b", 2),
				Placement: &policyv1alpha1.Placement{ReplicaScheduling: static("a", 2, "b", 1)}},
			want: targets("a", 6, "b", 3),
		},
		{
			name: "static weights by label; the heaviest matching entry counts",
			in: Input{Replicas: 4, Clusters: []Cluster{cluster("a", withLabels("tier", "big")), cluster("b"), cluster("c")},
				Placement: &policyv1alpha1.Placement{ReplicaScheduling: divided(policyv1alpha1.ReplicaDivisionPreferenceWeighted,
					&policyv1alpha1.ClusterPreferences{StaticWeightList: []policyv1alpha1.StaticClusterWeight{
						{TargetCluster: policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "big"}}}, Weight: 3},
						{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"a", "b"}}, Weight: 1},
					}})}},
			want: targets("a", 3, "b", 1),
		},
		{
			name: "equal weights: the remainder goes by name without history",
			in:   Input{Replicas: 7, Clusters: abc, Placement: &policyv1alpha1.Placement{ReplicaScheduling: divided("", nil)}},
			want: targets("a", 3, "b", 2, "c", 2),
		},
		{
			name: "equal weights: the remainder stays where it was",
			in: Input{Replicas: 7, Clusters: abc, Previous: targets("a", 2, "b", 2, "c", 3),
				Placement: &policyv1alpha1.Placement{ReplicaScheduling: divided("", nil)}},
			want: targets("a", 2, "b", 2, "c", 3),
		},
		{
			name: "static weights: no fitting cluster has one, so all weigh the same (as Karmada)",
			in:   Input{Replicas: 4, Clusters: abc, Placement: &policyv1alpha1.Placement{ReplicaScheduling: static("z", 1)}},
			want: targets("a", 2, "b", 1, "c", 1),
		},
		{
			name: "dynamic weights by room",
			in:   Input{Replicas: 8, Clusters: []Cluster{cluster("a", free(9)), cluster("b", free(3))}, Placement: &policyv1alpha1.Placement{ReplicaScheduling: dynamicWeights}},
			want: targets("a", 6, "b", 2),
		},
		{
			name: "dynamic weights: a scale-up keeps what runs and adds by room",
			in: Input{Replicas: 10, Clusters: []Cluster{cluster("a", free(0)), cluster("b", free(4))}, Previous: targets("a", 6, "b", 2),
				Placement: &policyv1alpha1.Placement{ReplicaScheduling: dynamicWeights}},
			want: targets("a", 6, "b", 4),
		},
		{
			name: "dynamic weights: a scale-down takes in proportion",
			in: Input{Replicas: 4, Clusters: []Cluster{cluster("a", free(0)), cluster("b", free(0))}, Previous: targets("a", 6, "b", 2),
				Placement: &policyv1alpha1.Placement{ReplicaScheduling: dynamicWeights}},
			want: targets("a", 3, "b", 1),
		},
		{
			name: "dynamic weights: not enough room",
			in: Input{Replicas: 8, Clusters: []Cluster{cluster("a", free(3)), cluster("b", free(2))},
				Placement: &policyv1alpha1.Placement{ReplicaScheduling: dynamicWeights}},
			wantError: []string{"the clusters have room for 5 more replicas, 8 are needed"},
		},
		{
			name: "dynamic weights: an evicted cluster's replicas go to the others by room, the rest stay",
			in: Input{Replicas: 9, Clusters: []Cluster{cluster("a", free(4)), cluster("b", free(2)), cluster("c", free(100))},
				Previous: targets("a", 3, "b", 3, "c", 3), Evicted: []string{"c"},
				Placement: &policyv1alpha1.Placement{ReplicaScheduling: dynamicWeights}},
			want: targets("a", 5, "b", 4),
		},
		{
			name: "dynamic weights: a cluster of unknown room weighs as room for every replica",
			in: Input{Replicas: 5, Clusters: []Cluster{cluster("a", free(9)), cluster("b")},
				Placement: &policyv1alpha1.Placement{ReplicaScheduling: dynamicWeights}},
			want: targets("a", 3, "b", 2),
		},
		{
			name: "dynamic weights: with a room unknown, a cluster known to be full still gets nothing",
			in: Input{Replicas: 4, Clusters: []Cluster{cluster("full", free(0)), cluster("b"), cluster("c", free(9))},
				Placement: &policyv1alpha1.Placement{ReplicaScheduling: dynamicWeights}},
			want: targets("b", 1, "c", 3),
		},
		{
			name: "aggregated: a cluster of unknown room is not limited by it",
			in: Input{Replicas: 50, Clusters: []Cluster{cluster("a", free(9)), cluster("b")},
				Placement: &policyv1alpha1.Placement{ReplicaScheduling: aggregate}},
			want: targets("b", 50),
		},
		{
			name: "aggregated: as few clusters as have room",
			in: Input{Replicas: 12, Clusters: []Cluster{cluster("a", free(5)), cluster("b", free(10)), cluster("c", free(3))},
				Placement: &policyv1alpha1.Placement{ReplicaScheduling: aggregate}},
			want: targets("a", 2, "b", 10),
		},
		{
			name: "aggregated: a scale-up fills the clusters in use first",
			in: Input{Replicas: 8, Clusters: []Cluster{cluster("a", free(5)), cluster("b", free(10))}, Previous: targets("a", 3),
				Placement: &policyv1alpha1.Placement{ReplicaScheduling: aggregate}},
			want: targets("a", 8),
		},
		{
			name: "aggregated: a scale-down empties the smallest first",
			in: Input{Replicas: 9, Clusters: []Cluster{cluster("a"), cluster("b"), cluster("c")}, Previous: targets("a", 6, "b", 2, "c", 3),
				Placement: &policyv1alpha1.Placement{ReplicaScheduling: aggregate}},
			want: targets("a", 6, "c", 3),
		},
		{
			name: "aggregated: not enough room",
			in: Input{Replicas: 8, Clusters: []Cluster{cluster("a", free(3)), cluster("b", free(2))},
				Placement: &policyv1alpha1.Placement{ReplicaScheduling: aggregate}},
			wantError: []string{"the clusters have room for 5 more replicas, 8 are needed"},
		},
		{
			name: "divided with no replicas (a ConfigMap): every selected cluster, 0 each",
			in:   Input{Clusters: abc, Placement: &policyv1alpha1.Placement{ReplicaScheduling: static("a", 1)}},
			want: targets("a", 0, "b", 0, "c", 0),
		},
		{
			name: "static weights: an evicted cluster's share goes to the rest",
			in: Input{Replicas: 6, Clusters: abc, Previous: targets("a", 4, "b", 2), Evicted: []string{"a"},
				Placement: &policyv1alpha1.Placement{ReplicaScheduling: static("a", 2, "b", 1, "c", 1)}},
			want: targets("b", 3, "c", 3),
		},
		{
			name: "a deleted cluster is dropped",
			in:   Input{Replicas: 1, Clusters: []Cluster{cluster("b")}, Previous: targets("a", 1)},
			want: targets("b", 1),
		},
		{
			name: "a cluster being deleted is no candidate",
			in:   Input{Replicas: 2, Clusters: []Cluster{cluster("a", deleting), cluster("b")}},
			want: targets("b", 2),
		},
		{
			name: "a cluster being deleted is left: its replicas go to the rest",
			in: Input{Replicas: 6, Clusters: []Cluster{cluster("a", deleting), cluster("b"), cluster("c")}, Previous: targets("a", 2, "b", 2, "c", 2),
				Placement: &policyv1alpha1.Placement{ReplicaScheduling: divided(policyv1alpha1.ReplicaDivisionPreferenceWeighted, nil)}},
			want: targets("b", 3, "c", 3),
		},
		{
			name:      "only a cluster being deleted: unschedulable, and says why",
			in:        Input{Replicas: 1, Clusters: []Cluster{cluster("a", deleting)}, Previous: targets("a", 1)},
			wantError: []string{"no cluster fits (a: being deleted)"},
		},
		{
			name: "nothing fits: the error names every cluster and its filter",
			in: Input{Replicas: 1, Clusters: []Cluster{cluster("a", notReady), cluster("b"), cluster("c", taint(corev1.Taint{Key: "k", Value: "v", Effect: corev1.TaintEffectNoSchedule})), cluster("d", deleting)},
				Evicted: []string{"b"}},
			wantError: []string{"no cluster fits (a: not ready, b: evicted by failover, c: taint k=v:NoSchedule not tolerated, d: being deleted)"},
		},
	}
	runSchedule(t, tests)
}

// runSchedule runs each case, and checks that scheduling again from a result changes nothing.
func runSchedule(t *testing.T, tests []scheduleCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Schedule(tt.in)
			if tt.wantError != nil {
				if err == nil {
					t.Fatalf("want an error, got %v", got)
				}
				for _, s := range tt.wantError {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not say %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got.Clusters); diff != "" {
				t.Errorf("clusters (-want +got):\n%s", diff)
			}
			if got.AffinityName != tt.affinity {
				t.Errorf("affinity %q, want %q", got.AffinityName, tt.affinity)
			}
			// Stable: scheduling again from its own result changes nothing.
			again := tt.in
			again.Previous, again.PreviousAffinity = got.Clusters, got.AffinityName
			second, err := Schedule(again)
			if err != nil {
				t.Fatalf("second schedule: %v", err)
			}
			if diff := cmp.Diff(got, second); diff != "" {
				t.Errorf("not stable (-first +second):\n%s", diff)
			}
		})
	}
}

func ptr(n int64) *int64 { return &n }
