package cluster

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
)

// cpuMemGrades: cpu [0,1) [1,2) [2,4) [4,∞) with memory [0,4Gi) [4Gi,16Gi) [16Gi,32Gi) [32Gi,∞), listed out of order.
func cpuMemGrades() []clusterv1alpha1.ResourceModel {
	bounds := []struct{ cpu, mem string }{{"0", "0"}, {"1", "4Gi"}, {"2", "16Gi"}, {"4", "32Gi"}, {"1000", "1Pi"}}
	var out []clusterv1alpha1.ResourceModel
	for i := len(bounds) - 2; i >= 0; i-- {
		out = append(out, clusterv1alpha1.ResourceModel{Grade: int32(i), Ranges: []clusterv1alpha1.ResourceModelRange{
			{Name: corev1.ResourceCPU, Min: resource.MustParse(bounds[i].cpu), Max: resource.MustParse(bounds[i+1].cpu)},
			{Name: corev1.ResourceMemory, Min: resource.MustParse(bounds[i].mem), Max: resource.MustParse(bounds[i+1].mem)},
		}})
	}
	return out
}

func namedNode(name string, allocatable corev1.ResourceList) *corev1.Node {
	n := node(corev1.ConditionTrue, allocatable)
	n.Name = name
	return n
}

func TestAllocatableModelings(t *testing.T) {
	counts := func(c0, c1, c2, c3 int32) []clusterv1alpha1.AllocatableModeling {
		return []clusterv1alpha1.AllocatableModeling{{Grade: 0, Count: c0}, {Grade: 1, Count: c1}, {Grade: 2, Count: c2}, {Grade: 3, Count: c3}}
	}
	var ten []*corev1.Node
	for i := range 10 {
		ten = append(ten, namedNode(fmt.Sprintf("n%d", i), list("cpu", "1", "memory", "8Gi", "pods", "110")))
	}
	tests := []struct {
		name   string
		models []clusterv1alpha1.ResourceModel
		nodes  []*corev1.Node
		pods   []*corev1.Pod
		want   []clusterv1alpha1.AllocatableModeling
	}{
		{name: "no models: none counted", nodes: ten},
		{name: "ten 1-CPU nodes are grade 1", models: cpuMemGrades(), nodes: ten, want: counts(0, 10, 0, 0)},
		{name: "every resource must reach the grade's min", models: cpuMemGrades(),
			nodes: []*corev1.Node{namedNode("big-cpu", list("cpu", "8", "memory", "8Gi")), namedNode("big", list("cpu", "8", "memory", "64Gi"))},
			want:  counts(0, 1, 0, 1)},
		{name: "a resource the node lacks counts as none free", models: cpuMemGrades(),
			nodes: []*corev1.Node{namedNode("cpu-only", list("cpu", "8"))}, want: counts(1, 0, 0, 0)},
		{name: "what the node's pods request is not free", models: cpuMemGrades(),
			nodes: []*corev1.Node{namedNode("a", list("cpu", "4", "memory", "64Gi")), namedNode("b", list("cpu", "4", "memory", "64Gi"))},
			pods: []*corev1.Pod{pod("a", corev1.PodRunning, container(list("cpu", "2500m"))), pod("b", corev1.PodSucceeded, container(list("cpu", "4"))),
				pod("", corev1.PodPending, container(list("cpu", "4")))},
			want: counts(0, 1, 0, 1)},
		{name: "a node with no room for a pod is not counted", models: cpuMemGrades(),
			nodes: []*corev1.Node{namedNode("a", list("cpu", "4", "memory", "64Gi", "pods", "1"))},
			pods:  []*corev1.Pod{pod("a", corev1.PodRunning, container(nil))},
			want:  counts(0, 0, 0, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, allocatableModelings(tt.models, tt.nodes, tt.pods)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
