package scheduling

import (
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

// withAPIs is c reporting that it serves kinds of group version gv (and apps/v1 Deployments).
func withAPIs(c clusterv1alpha1.Cluster, gv string, kinds ...string) clusterv1alpha1.Cluster {
	c.Status.APIEnablements = []clusterv1alpha1.APIEnablement{
		{GroupVersion: "apps/v1", Resources: []clusterv1alpha1.APIResource{{Name: "deployments", Kind: "Deployment"}}}}
	if gv != "" {
		e := clusterv1alpha1.APIEnablement{GroupVersion: gv}
		for _, k := range kinds {
			e.Resources = append(e.Resources, clusterv1alpha1.APIResource{Name: strings.ToLower(k) + "s", Kind: k})
		}
		c.Status.APIEnablements = append(c.Status.APIEnablements, e)
	}
	return c
}

// As Karmada's APIEnablement filter: the template's kind (spec.resource) goes only to clusters whose apiEnablements
// list it; placed nowhere, the Scheduled condition says which clusters do not serve it.
func TestDecideAPIEnablement(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	withKruise := withAPIs(readyCluster("with-kruise"), "apps.kruise.io/v1alpha1", "CloneSet")
	without := withAPIs(readyCluster("without-kruise"), "")
	unreported := readyCluster("unreported")
	duplicated := &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDuplicated}
	weighted := &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided,
		ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted}
	for _, tc := range []struct {
		name     string
		clusters []clusterv1alpha1.Cluster
		rs       *policyv1alpha1.ReplicaSchedulingStrategy
		previous []workv1alpha1.TargetCluster
		want     []string // clusters placed on
		wantErr  []string // or what the Scheduled=False message says
	}{
		{name: "duplicated", clusters: []clusterv1alpha1.Cluster{withKruise, without}, rs: duplicated, want: []string{"with-kruise"}},
		{name: "divided", clusters: []clusterv1alpha1.Cluster{withKruise, without}, rs: weighted, want: []string{"with-kruise"}},
		{name: "a target whose APIs are not reported stays", clusters: []clusterv1alpha1.Cluster{withKruise, without, unreported}, rs: duplicated,
			previous: []workv1alpha1.TargetCluster{{Name: "unreported", Replicas: 4}}, want: []string{"unreported", "with-kruise"}},
		{name: "served nowhere", clusters: []clusterv1alpha1.Cluster{without, withAPIs(readyCluster("old-kruise"), "apps.kruise.io/v1beta1", "CloneSet")},
			rs: duplicated, wantErr: []string{"old-kruise: does not serve apps.kruise.io/v1alpha1 CloneSet",
				"without-kruise: does not serve apps.kruise.io/v1alpha1 CloneSet"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := &workv1alpha1.ResourceBindingSpec{
				Resource:  workv1alpha1.ObjectReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Namespace: "shop", Name: "web"},
				Replicas:  4,
				Placement: &policyv1alpha1.Placement{ReplicaScheduling: tc.rs},
				Clusters:  tc.previous,
			}
			d := decide(spec, &workv1alpha1.ResourceBindingStatus{}, memory{}, tc.clusters, now, 0)
			if tc.wantErr != nil {
				var status workv1alpha1.ResourceBindingStatus
				applyStatus(&status, d, false, metav1.NewTime(now))
				cond := meta.FindStatusCondition(status.Conditions, workv1alpha1.ConditionScheduled)
				if d.err == nil || cond == nil || cond.Status != metav1.ConditionFalse {
					t.Fatalf("placed on %v, condition %+v", d.result.Clusters, cond)
				}
				for _, s := range tc.wantErr {
					if !strings.Contains(cond.Message, s) {
						t.Errorf("Scheduled message %q does not say %q", cond.Message, s)
					}
				}
				return
			}
			if d.err != nil {
				t.Fatal(d.err)
			}
			var got []string
			for _, c := range d.result.Clusters {
				got = append(got, c.Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("placed on %v, want %v", d.result.Clusters, tc.want)
			}
		})
	}
}
