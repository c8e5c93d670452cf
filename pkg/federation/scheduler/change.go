package scheduler

import (
	"reflect"

	"k8s.io/apimachinery/pkg/api/equality"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
)

// Change is what an update of a Cluster means to the bindings the scheduler has placed.
type Change int

const (
	// Unchanged: nothing the scheduler reads changed (a probe time, the Kubernetes version).
	Unchanged Change = iota
	// CapacityChanged: only the resource summary, or the resource models it is read with. A member's free resources move with every pod it runs; placed
	// bindings keep their placement (moving replicas with every such change would churn them), and only bindings
	// that found no room may fit now: those not placed, and duplicated ones left off the cluster for room
	// (Result.NoRoom).
	CapacityChanged
	// PlacementChanged: something that filters, scores or fails over clusters (labels, provider, region, zones,
	// taints, readiness, the APIs served: a CRD installed there), or the cluster is leaving. Every binding is
	// looked at again.
	PlacementChanged
)

// ClusterChange tells what changed for the scheduler from old to cur, the same Cluster.
func ClusterChange(old, cur *clusterv1alpha1.Cluster) Change {
	if old.DeletionTimestamp.IsZero() != cur.DeletionTimestamp.IsZero() {
		return PlacementChanged
	}
	o, c := NewCluster(old, nil), NewCluster(cur, nil)
	if !o.ReadyChanged.Equal(c.ReadyChanged) {
		return PlacementChanged
	}
	// What capacity allows is compared below, from the summary; the times were just compared.
	o.Available, o.AvailableKnown, o.ReadyChanged = 0, false, c.ReadyChanged
	c.Available, c.AvailableKnown = 0, false
	if !reflect.DeepEqual(o, c) {
		return PlacementChanged
	}
	if !equality.Semantic.DeepEqual(old.Status.ResourceSummary, cur.Status.ResourceSummary) ||
		!equality.Semantic.DeepEqual(old.Spec.ResourceModels, cur.Spec.ResourceModels) {
		return CapacityChanged
	}
	return Unchanged
}
