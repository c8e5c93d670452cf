package scheduler

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

// grades are cpu and memory models: cpu [0,1) [1,2) [2,4) [4,∞), memory [0,4Gi) [4Gi,16Gi) [16Gi,32Gi) [32Gi,∞).
func grades() []clusterv1alpha1.ResourceModel {
	bounds := []struct{ cpu, mem string }{{"0", "0"}, {"1", "4Gi"}, {"2", "16Gi"}, {"4", "32Gi"}, {"9223372036854775807", "9223372036854775807"}}
	var out []clusterv1alpha1.ResourceModel
	for i := 0; i+1 < len(bounds); i++ {
		out = append(out, clusterv1alpha1.ResourceModel{Grade: int32(i), Ranges: []clusterv1alpha1.ResourceModelRange{
			{Name: corev1.ResourceCPU, Min: resource.MustParse(bounds[i].cpu), Max: resource.MustParse(bounds[i+1].cpu)},
			{Name: corev1.ResourceMemory, Min: resource.MustParse(bounds[i].mem), Max: resource.MustParse(bounds[i+1].mem)},
		}})
	}
	return out
}

func counted(kv ...int32) []clusterv1alpha1.AllocatableModeling {
	var out []clusterv1alpha1.AllocatableModeling
	for i := 0; i < len(kv); i += 2 {
		out = append(out, clusterv1alpha1.AllocatableModeling{Grade: kv[i], Count: kv[i+1]})
	}
	return out
}

// As Karmada's general estimator: with resource models, room is the smaller of what the summed resources and what
// the nodes counted per grade allow.
func TestAvailableReplicasByResourceModels(t *testing.T) {
	q := resource.MustParse
	// Ten nodes with 1 CPU and 8Gi free each (grade 1).
	tenSmall := &clusterv1alpha1.ResourceSummary{
		Allocatable:          corev1.ResourceList{corev1.ResourceCPU: q("10"), corev1.ResourceMemory: q("80Gi"), corev1.ResourcePods: q("1100")},
		AllocatableModelings: counted(0, 0, 1, 10, 2, 0, 3, 0),
	}
	mixed := &clusterv1alpha1.ResourceSummary{
		Allocatable:          corev1.ResourceList{corev1.ResourceCPU: q("100"), corev1.ResourceMemory: q("400Gi")},
		AllocatableModelings: counted(0, 3, 1, 4, 2, 2, 3, 1),
	}
	cpu := func(s string) *workv1alpha1.ReplicaRequirements {
		return &workv1alpha1.ReplicaRequirements{ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: q(s)}}
	}
	tests := []struct {
		name    string
		summary *clusterv1alpha1.ResourceSummary
		models  []clusterv1alpha1.ResourceModel
		req     *workv1alpha1.ReplicaRequirements
		want    int32
	}{
		{"2-CPU replicas on ten 1-CPU nodes: none fits", tenSmall, grades(), cpu("2"), 0},
		{"without models: the summed CPUs", tenSmall, nil, cpu("2"), 5},
		{"1-CPU replicas: one a node", tenSmall, grades(), cpu("1"), 10},
		{"half a CPU: two on each grade 1 node (its minimum, 1 CPU)", tenSmall, grades(), cpu("500m"), 20},
		// Grades 2 and 3 cover 2 CPUs: 2 nodes * (2/2) + 1 node * (4/2).
		{"mixed grades", mixed, grades(), cpu("2"), 4},
		// 20Gi needs grade 3 (min 32Gi), whose one node takes one such replica.
		{"cpu and memory: the grade both need", mixed, grades(), &workv1alpha1.ReplicaRequirements{
			ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("20Gi")}}, 1},
		{"larger than every grade's minimum", mixed, grades(), cpu("8"), 0},
		{"a resource the models do not range: the summed resources alone", mixed, grades(), &workv1alpha1.ReplicaRequirements{
			ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: q("2"), "nvidia.com/gpu": q("1")}}, 0},
		{"no nodes counted yet: the summed resources alone", &clusterv1alpha1.ResourceSummary{Allocatable: tenSmall.Allocatable},
			grades(), cpu("2"), 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCluster(&clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "m"},
				Spec: clusterv1alpha1.ClusterSpec{ResourceModels: tt.models}, Status: clusterv1alpha1.ClusterStatus{ResourceSummary: tt.summary}}, tt.req)
			if !c.AvailableKnown || c.Available != tt.want {
				t.Errorf("room %d (known %v), want %d", c.Available, c.AvailableKnown, tt.want)
			}
		})
	}
}

// A request of a resource no grade ranges leaves the models out, whatever the other requests ask: the estimate is
// the summed resources', every time. modelReplicas once returned on the first request it looked at, in map order,
// so a CPU request beyond every grade next to a GPU one made the room 0 or the summed estimate by turns.
func TestAvailableReplicasUnrangedResourceIgnoresModels(t *testing.T) {
	q := resource.MustParse
	summary := &clusterv1alpha1.ResourceSummary{
		Allocatable:          corev1.ResourceList{corev1.ResourceCPU: q("100"), "nvidia.com/gpu": q("4")},
		AllocatableModelings: counted(0, 0, 1, 0, 2, 0, 3, 10),
	}
	req := &workv1alpha1.ReplicaRequirements{ResourceRequest: corev1.ResourceList{
		corev1.ResourceCPU: q("6"), // beyond grade 3's minimum (4)
		"nvidia.com/gpu":   q("1"), // ranged by no grade
	}}
	mc := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "m"},
		Spec: clusterv1alpha1.ClusterSpec{ResourceModels: grades()}, Status: clusterv1alpha1.ClusterStatus{ResourceSummary: summary}}
	for i := 0; i < 100; i++ { // map order differs from pass to pass
		if c := NewCluster(mc, req); !c.AvailableKnown || c.Available != 4 {
			t.Fatalf("pass %d: room %d (known %v), want 4 (the GPUs summed; the models do not range them)", i, c.Available, c.AvailableKnown)
		}
	}
}
