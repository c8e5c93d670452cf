package cluster

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
)

// allocatableModelings counts the nodes of each grade of models, as Karmada's cluster status controller does: a
// node is of the highest grade whose every range's min its free resources reach (free: allocatable less the
// requests of the pods on it), the lowest grade taking the rest. A node with no room for one more pod is not
// counted. Every grade is listed, in grade order; nil without models.
func allocatableModelings(models []clusterv1alpha1.ResourceModel, nodes []*corev1.Node, pods []*corev1.Pod) []clusterv1alpha1.AllocatableModeling {
	if len(models) == 0 {
		return nil
	}
	models = slices.Clone(models)
	slices.SortFunc(models, func(a, b clusterv1alpha1.ResourceModel) int { return int(a.Grade) - int(b.Grade) })
	requested := map[string]corev1.ResourceList{}
	podsOn := map[string]int64{}
	for _, p := range pods {
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if requested[p.Spec.NodeName] == nil {
			requested[p.Spec.NodeName] = corev1.ResourceList{}
		}
		addTo(requested[p.Spec.NodeName], podRequests(p))
		podsOn[p.Spec.NodeName]++
	}
	out := make([]clusterv1alpha1.AllocatableModeling, len(models))
	for i := range models {
		out[i].Grade = models[i].Grade
	}
	for _, n := range nodes {
		if room, ok := n.Status.Allocatable[corev1.ResourcePods]; ok && room.Value()-podsOn[n.Name] <= 0 {
			continue // full: it takes no replica, whatever else it has free
		}
		free := n.Status.Allocatable.DeepCopy()
		for name, q := range requested[n.Name] {
			if f, ok := free[name]; ok {
				f.Sub(q)
				free[name] = f
			}
		}
		out[gradeOf(models, free)].Count++
	}
	return out
}

// gradeOf is the index in models (sorted by grade) of the highest grade whose every range's min free reaches; 0
// when none does (the lowest grade's min counts as 0). A resource the node has none of is 0 free.
func gradeOf(models []clusterv1alpha1.ResourceModel, free corev1.ResourceList) int {
	for i := len(models) - 1; i > 0; i-- {
		if !slices.ContainsFunc(models[i].Ranges, func(r clusterv1alpha1.ResourceModelRange) bool {
			q := free[r.Name]
			return q.Cmp(r.Min) < 0
		}) {
			return i
		}
	}
	return 0
}
