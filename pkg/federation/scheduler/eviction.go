package scheduler

import (
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

// Eviction task fields fedmesh's scheduler writes.
const (
	// EvictionReason is the reason of a task the scheduler makes for a cluster it failed over from.
	EvictionReason = "TaintUntolerated"
	// EvictionProducer names the scheduler as the task's producer.
	EvictionProducer = "fedmesh-scheduler"
)

// GracefulPurge reports whether failover keeps the copy on a cluster it leaves until the substitute is healthy:
// purgeMode Gracefully (Karmada's default) or its older name, unless failover says Directly or Immediately.
func GracefulPurge(f *policyv1alpha1.FailoverBehavior) bool {
	if f == nil {
		return false
	}
	if f.Cluster == nil {
		return true
	}
	switch f.Cluster.PurgeMode {
	case policyv1alpha1.PurgeModeDirectly, policyv1alpha1.PurgeModeImmediately:
		return false
	}
	return true
}

// EvictionTasks are the binding's gracefulEvictionTasks once it moves from the clusters before to those after,
// having evicted (failed over from) the clusters evicted: with graceful purge, a task for each evicted cluster
// (holding the replicas it had), so its copy stays until the substitute is healthy (see package eviction); a
// task of a cluster the binding is on again is dropped, as that copy is the binding's own once more.
func EvictionTasks(tasks []workv1alpha1.GracefulEvictionTask, f *policyv1alpha1.FailoverBehavior, evicted []string,
	before, after []workv1alpha1.TargetCluster, now time.Time) []workv1alpha1.GracefulEvictionTask {
	on := func(list []workv1alpha1.TargetCluster, name string) bool {
		return slices.ContainsFunc(list, func(t workv1alpha1.TargetCluster) bool { return t.Name == name })
	}
	out := make([]workv1alpha1.GracefulEvictionTask, 0, len(tasks)+len(evicted))
	for _, t := range tasks {
		if !on(after, t.FromCluster) {
			out = append(out, t)
		}
	}
	if !GracefulPurge(f) {
		return out
	}
	created := metav1.NewTime(now)
	var wasOn []string
	for _, t := range before {
		wasOn = append(wasOn, t.Name)
	}
	for _, name := range evicted {
		i := slices.IndexFunc(before, func(t workv1alpha1.TargetCluster) bool { return t.Name == name })
		if i < 0 || on(after, name) || slices.ContainsFunc(out, func(t workv1alpha1.GracefulEvictionTask) bool { return t.FromCluster == name }) {
			continue
		}
		var replicas *int32 // unset for templates without replicas
		if r := before[i].Replicas; r > 0 {
			replicas = &r
		}
		mode := policyv1alpha1.PurgeModeGracefully
		if f.Cluster != nil && f.Cluster.PurgeMode != "" {
			mode = f.Cluster.PurgeMode
		}
		out = append(out, workv1alpha1.GracefulEvictionTask{
			FromCluster: name, Replicas: replicas, Reason: EvictionReason, Producer: EvictionProducer, PurgeMode: mode,
			Message:                fmt.Sprintf("cluster %s unhealthy past the binding's tolerations; its copy stays until the substitute is healthy", name),
			ClustersBeforeFailover: wasOn, CreationTimestamp: &created,
		})
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
