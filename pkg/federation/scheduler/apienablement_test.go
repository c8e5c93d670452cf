package scheduler

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
)

// serving adds to a cluster's reported APIs the kinds of group version gv; the list is complete unless incomplete
// follows.
func serving(gv string, kinds ...string) func(*Cluster) {
	return func(c *Cluster) {
		c.APIsComplete = true
		e := clusterv1alpha1.APIEnablement{GroupVersion: gv}
		for _, k := range kinds {
			e.Resources = append(e.Resources, clusterv1alpha1.APIResource{Name: k + "s", Kind: k})
		}
		c.APIs = append(c.APIs, e)
	}
}

// incomplete marks a cluster's API list as partial (CompleteAPIEnablements False: discovery failed for a group).
func incomplete(c *Cluster) { c.APIsComplete = false }

// As Karmada's APIEnablement filter: a cluster whose reported APIs lack the template's kind (a CRD installed only
// in some members) is no candidate; one that reported none is not left out for it. Unlike Karmada, a target stays
// whatever its list says (taking none of a scale-up while the list lacks the kind).
func TestScheduleAPIEnablement(t *testing.T) {
	cloneSet := schema.GroupVersionKind{Group: "apps.kruise.io", Version: "v1alpha1", Kind: "CloneSet"}
	withCRD := serving("apps.kruise.io/v1alpha1", "CloneSet", "StatefulSet")
	apps := serving("apps/v1", "Deployment")
	equal := &policyv1alpha1.Placement{ReplicaScheduling: divided(policyv1alpha1.ReplicaDivisionPreferenceWeighted, nil)}
	runSchedule(t, []scheduleCase{
		{
			name: "duplicated: only where the kind is served",
			in:   Input{Replicas: 2, GVK: cloneSet, Clusters: []Cluster{cluster("a", apps, withCRD), cluster("b", apps)}},
			want: targets("a", 2),
		},
		{
			name: "divided: every replica where the kind is served",
			in:   Input{Replicas: 4, GVK: cloneSet, Placement: equal, Clusters: []Cluster{cluster("a", apps, withCRD), cluster("b", apps)}},
			want: targets("a", 4),
		},
		{
			name: "a cluster that reported no APIs yet is not left out for them",
			in:   Input{Replicas: 2, GVK: cloneSet, Clusters: []Cluster{cluster("a", withCRD), cluster("b")}},
			want: targets("a", 2, "b", 2),
		},
		{
			name: "no kind to check",
			in:   Input{Replicas: 2, Clusters: []Cluster{cluster("a", apps)}},
			want: targets("a", 2),
		},
		{
			name: "the core group is v1",
			in: Input{GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
				Clusters: []Cluster{cluster("a", serving("v1", "ConfigMap")), cluster("b", apps)}},
			want: targets("a", 0),
		},
		{
			name: "the kind served in another version only does not do",
			in:   Input{Replicas: 1, GVK: cloneSet, Clusters: []Cluster{cluster("a", serving("apps.kruise.io/v1beta1", "CloneSet")), cluster("b", withCRD)}},
			want: targets("b", 1),
		},
		{
			// A probe whose discovery briefly missed the group (a member apiserver restarting) must not take the
			// binding off b: its Work would go, and every CloneSet there with it. A Work of a kind really gone
			// says so (Applied False, UnknownKind); changing the placement takes the binding off.
			name: "a target whose complete list now lacks the kind stays",
			in: Input{Replicas: 2, GVK: cloneSet, Previous: targets("a", 2, "b", 2),
				Clusters: []Cluster{cluster("a", withCRD), cluster("b", apps)}},
			want: targets("a", 2, "b", 2),
		},
		{
			name: "a target that lacks the kind stays though no other cluster serves it",
			in: Input{Replicas: 2, GVK: cloneSet, Previous: targets("b", 2),
				Clusters: []Cluster{cluster("a", apps), cluster("b", apps)}},
			want: targets("b", 2),
		},
		{
			name: "divided: a target whose list lacks the kind keeps its replicas but takes none of a scale-up",
			in: Input{Replicas: 6, GVK: cloneSet, Placement: equal, Previous: targets("a", 2, "b", 2),
				Clusters: []Cluster{cluster("a", withCRD), cluster("b", apps)}},
			want: targets("a", 4, "b", 2),
		},
		{
			name: "divided scale-up with no cluster serving the kind: unschedulable, the target keeps its replicas",
			in: Input{Replicas: 4, GVK: cloneSet, Placement: equal, Previous: targets("b", 2),
				Clusters: []Cluster{cluster("a", apps), cluster("b", apps)}},
			wantError: []string{"a: does not serve apps.kruise.io/v1alpha1 CloneSet", "b: does not serve apps.kruise.io/v1alpha1 CloneSet, keeps its 2 replicas"},
		},
		{
			name: "a target that reports no list (not yet, or not any more) stays",
			in: Input{Replicas: 2, GVK: cloneSet, Previous: targets("a", 2, "b", 2),
				Clusters: []Cluster{cluster("a", withCRD), cluster("b")}},
			want: targets("a", 2, "b", 2),
		},
		{
			name: "settled divided: a target whose list lacks the kind keeps its replicas",
			in: Input{Replicas: 4, GVK: cloneSet, Placement: equal, Settled: true, Previous: targets("a", 2, "b", 2),
				Clusters: []Cluster{cluster("a", withCRD), cluster("b", apps)}},
			want: targets("a", 2, "b", 2),
		},
		{
			name: "an incomplete list: a target stays though the list lacks the kind",
			in: Input{Replicas: 2, GVK: cloneSet, Previous: targets("a", 2, "b", 2),
				Clusters: []Cluster{cluster("a", withCRD), cluster("b", apps, incomplete)}},
			want: targets("a", 2, "b", 2),
		},
		{
			name: "settled divided: a target with an incomplete list keeps its replicas",
			in: Input{Replicas: 4, GVK: cloneSet, Placement: equal, Settled: true, Previous: targets("a", 2, "b", 2),
				Clusters: []Cluster{cluster("a", withCRD), cluster("b", apps, incomplete)}},
			want: targets("a", 2, "b", 2),
		},
		{
			name: "an incomplete list lacking the kind gets no new binding",
			in:   Input{Replicas: 2, GVK: cloneSet, Clusters: []Cluster{cluster("a", withCRD), cluster("b", apps, incomplete)}},
			want: targets("a", 2),
		},
		{
			name: "an incomplete list that has the kind is served",
			in:   Input{Replicas: 2, GVK: cloneSet, Clusters: []Cluster{cluster("a", withCRD, incomplete)}},
			want: targets("a", 2),
		},
		{
			name: "served nowhere: the error names the clusters that do not serve it",
			in: Input{Replicas: 2, GVK: cloneSet, Clusters: []Cluster{cluster("a", apps), cluster("b", apps, serving("apps.kruise.io/v1beta1", "CloneSet"))},
				Placement: &policyv1alpha1.Placement{ClusterAffinities: []policyv1alpha1.ClusterAffinityTerm{{AffinityName: "primary"}}}},
			wantError: []string{"affinity primary: no cluster fits (a: does not serve apps.kruise.io/v1alpha1 CloneSet, " +
				"b: does not serve apps.kruise.io/v1alpha1 CloneSet)"},
		},
	})
}
