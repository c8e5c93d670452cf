package scheduler

import (
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
)

// modelReplicas estimates, as Karmada's general estimator does from a cluster's resource models, how many replicas
// each requesting requests fit on its nodes counted per grade (status.resourceSummary.allocatableModelings): a
// node of a grade has at least the grade's minimum of every resource free, so the replicas fit only on nodes of a
// grade whose minimum covers each request, as many times there as the request fits in that minimum. Summed
// resources would take ten nodes with 1 CPU free each for room for five 2-CPU replicas; none fits on any of them.
// ok is false when the models do not apply: none, no node counted, or a request for a resource they do not range.
func modelReplicas(models []clusterv1alpha1.ResourceModel, counts []clusterv1alpha1.AllocatableModeling,
	requests corev1.ResourceList) (int64, bool) {
	if len(models) == 0 || len(counts) == 0 {
		return 0, false
	}
	models = slices.Clone(models)
	slices.SortFunc(models, func(a, b clusterv1alpha1.ResourceModel) int { return int(a.Grade) - int(b.Grade) })
	// Every grade must range every request first: a request no grade tells of leaves the models out, whatever
	// the other requests ask (checked in one loop with the grades, the answer would follow map order).
	for name, req := range requests {
		if req.Sign() <= 0 || name == corev1.ResourcePods {
			continue
		}
		for i := range models {
			if _, ok := modelMin(&models[i], name); !ok {
				return 0, false // this grade says nothing of the resource: no node count to go by
			}
		}
	}
	lowest := 0 // the lowest grade any request allows
	for name, req := range requests {
		if req.Sign() <= 0 || name == corev1.ResourcePods {
			continue
		}
		grade := -1
		for i := range models {
			if m, _ := modelMin(&models[i], name); m.Cmp(req) >= 0 {
				grade = i
				break
			}
		}
		if grade < 0 {
			return 0, true // larger than every grade's minimum: no node is known to have that much free
		}
		lowest = max(lowest, grade)
	}
	var total int64
	for i := lowest; i < len(models); i++ {
		nodes := nodesOfGrade(counts, models[i].Grade)
		if nodes == 0 {
			continue
		}
		perNode := int64(math.MaxInt32)
		for name, req := range requests {
			if req.Sign() <= 0 || name == corev1.ResourcePods {
				continue
			}
			m, _ := modelMin(&models[i], name)
			perNode = min(perNode, timesFit(m, req))
		}
		// At least one: the grade's minimum covers every request (the grade was chosen so).
		total = min(total+int64(nodes)*max(perNode, 1), math.MaxInt32)
	}
	return total, true
}

// modelMin is the minimum of resource name in grade m, false when m does not range it.
func modelMin(m *clusterv1alpha1.ResourceModel, name corev1.ResourceName) (resource.Quantity, bool) {
	for _, r := range m.Ranges {
		if r.Name == name {
			return r.Min, true
		}
	}
	return resource.Quantity{}, false
}

func nodesOfGrade(counts []clusterv1alpha1.AllocatableModeling, grade int32) int32 {
	for _, c := range counts {
		if c.Grade == grade {
			return c.Count
		}
	}
	return 0
}
