package scheduler

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

func TestNewCluster(t *testing.T) {
	c := &clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "m1", Labels: map[string]string{"env": "prod"}},
		Spec:       clusterv1alpha1.ClusterSpec{Provider: "aws", Region: "eu", Zone: "z1", Zones: []string{"z1", "z2"}},
		Status: clusterv1alpha1.ClusterStatus{Conditions: []metav1.Condition{
			{Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionFalse, LastTransitionTime: metav1.NewTime(now)},
		}, APIEnablements: []clusterv1alpha1.APIEnablement{{GroupVersion: "v1", Resources: []clusterv1alpha1.APIResource{{Name: "pods", Kind: "Pod"}}}}},
	}
	got := NewCluster(c, nil)
	want := Cluster{Name: "m1", Labels: map[string]string{"env": "prod"}, Provider: "aws", Region: "eu",
		Zones: []string{"z1", "z2"}, Ready: metav1.ConditionFalse, ReadyChanged: now, APIs: c.Status.APIEnablements}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	c.Status.Conditions = append(c.Status.Conditions, metav1.Condition{Type: clusterv1alpha1.ClusterConditionCompleteAPIEnablements, Status: metav1.ConditionTrue})
	if !NewCluster(c, nil).APIsComplete {
		t.Error("a Cluster whose CompleteAPIEnablements is True is not APIsComplete")
	}

	c.DeletionTimestamp = &metav1.Time{Time: now}
	if !NewCluster(c, nil).Deleting {
		t.Error("a Cluster with a deletionTimestamp is not Deleting")
	}
}

func TestAvailableReplicas(t *testing.T) {
	q := resource.MustParse
	summary := &clusterv1alpha1.ResourceSummary{
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: q("4"), corev1.ResourceMemory: q("8Gi"), corev1.ResourcePods: q("110")},
		Allocated:   corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("2Gi"), corev1.ResourcePods: q("100")},
		Allocating:  corev1.ResourceList{corev1.ResourceCPU: q("500m")},
	}
	request := func(kv ...string) *workv1alpha1.ReplicaRequirements {
		r := &workv1alpha1.ReplicaRequirements{ResourceRequest: corev1.ResourceList{}}
		for i := 0; i < len(kv); i += 2 {
			r.ResourceRequest[corev1.ResourceName(kv[i])] = q(kv[i+1])
		}
		return r
	}
	tests := []struct {
		name    string
		summary *clusterv1alpha1.ResourceSummary
		req     *workv1alpha1.ReplicaRequirements
		want    int32
		known   bool
	}{
		{name: "no summary: unknown", req: request("cpu", "1")},
		{name: "cpu bounds: 2.5 free / 500m", summary: summary, req: request("cpu", "500m"), want: 5, known: true},
		{name: "memory bounds: 6Gi free / 2Gi", summary: summary, req: request("cpu", "100m", "memory", "2Gi"), want: 3, known: true},
		{name: "pods bound: 10 free", summary: summary, req: request("cpu", "10m"), want: 10, known: true},
		{name: "no requests: pods", summary: summary, want: 10, known: true},
		{name: "a resource the cluster does not have: none fit", summary: summary, req: request("nvidia.com/gpu", "1"), want: 0, known: true},
		{name: "nothing reported that the replicas need: unknown",
			summary: &clusterv1alpha1.ResourceSummary{Allocatable: corev1.ResourceList{corev1.ResourceCPU: q("4")}}},
		{name: "over-allocated: none",
			summary: &clusterv1alpha1.ResourceSummary{Allocatable: corev1.ResourceList{corev1.ResourceCPU: q("1")}, Allocated: corev1.ResourceList{corev1.ResourceCPU: q("2")}},
			req:     request("cpu", "1"), want: 0, known: true},
		// 10Pi in milli-units is past 2^63: the division is exact, not an overflow into negative room.
		{name: "past int64 in milli-units",
			summary: &clusterv1alpha1.ResourceSummary{Allocatable: corev1.ResourceList{corev1.ResourceEphemeralStorage: q("10Pi")}},
			req:     request("ephemeral-storage", "1Gi"), want: 10 << 20, known: true},
		{name: "more than an int32 fit: capped",
			summary: &clusterv1alpha1.ResourceSummary{Allocatable: corev1.ResourceList{corev1.ResourceEphemeralStorage: q("10Ei")}},
			req:     request("ephemeral-storage", "1"), want: math.MaxInt32, known: true},
		{name: "a fraction of a CPU, a sliver of a byte",
			summary: &clusterv1alpha1.ResourceSummary{Allocatable: corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("1")}},
			req:     request("cpu", "300m", "memory", "1m"), want: 3, known: true},
		{name: "a negative request counts as none", summary: summary, req: request("cpu", "-1"), want: 10, known: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, known := availableReplicas(tt.summary, nil, tt.req)
			if got != tt.want || known != tt.known {
				t.Errorf("got %d (known %v), want %d (known %v)", got, known, tt.want, tt.known)
			}
		})
	}
}
