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

// Departure is what one scheduling pass takes a binding off.
type Departure struct {
	// Evicted are the clusters cluster failover leaves, AppEvicted those application failover leaves.
	Evicted, AppEvicted []string
	// Preserved is the state statePreservation picked from the copy on each cluster left (PreservedLabelState).
	Preserved map[string]map[string]string
}

// EvictionTasks are the binding's gracefulEvictionTasks once it moves from the clusters before to those after,
// having failed over from the clusters d.Evicted and, by application failover, from d.AppEvicted. A cluster failed
// over from gets a task (holding the replicas it had) with graceful purge, so its copy stays until the substitute
// is healthy (see package eviction); with purgeMode Directly, only when it carries state preserved from the
// cluster. A cluster application failover left always gets one, which also keeps the
// cluster out of scheduling while it lasts (ApplicationEvicted): its purgeMode says whether the copy stays
// (Gracefully, Never: suppressDeletion until a person clears it) or goes at once (Directly). A task of a cluster
// the binding is on again is dropped, as that copy is the binding's own once more. Each new task carries the
// state preserved from its cluster and the clusters the binding was on before.
func EvictionTasks(tasks []workv1alpha1.GracefulEvictionTask, f *policyv1alpha1.FailoverBehavior, d Departure,
	before, after []workv1alpha1.TargetCluster, now time.Time) []workv1alpha1.GracefulEvictionTask {
	on := func(list []workv1alpha1.TargetCluster, name string) bool {
		return slices.ContainsFunc(list, func(t workv1alpha1.TargetCluster) bool { return t.Name == name })
	}
	out := make([]workv1alpha1.GracefulEvictionTask, 0, len(tasks)+len(d.Evicted)+len(d.AppEvicted))
	for _, t := range tasks {
		if !on(after, t.FromCluster) {
			out = append(out, t)
		}
	}
	created := metav1.NewTime(now)
	var wasOn []string
	for _, t := range before {
		wasOn = append(wasOn, t.Name)
	}
	add := func(name string, task workv1alpha1.GracefulEvictionTask) {
		i := slices.IndexFunc(before, func(t workv1alpha1.TargetCluster) bool { return t.Name == name })
		if i < 0 || on(after, name) || slices.ContainsFunc(out, func(t workv1alpha1.GracefulEvictionTask) bool { return t.FromCluster == name }) {
			return
		}
		if r := before[i].Replicas; r > 0 { // unset for templates without replicas
			task.Replicas = &r
		}
		task.FromCluster, task.Producer, task.ClustersBeforeFailover, task.CreationTimestamp = name, EvictionProducer, wasOn, &created
		task.PreservedLabelState = d.Preserved[name]
		out = append(out, task)
	}
	// Application failover's task first: leaving a cluster for both reasons at once, the workload must not go
	// straight back once the cluster is healthy again.
	if f != nil && f.Application != nil {
		app := f.Application
		task := workv1alpha1.GracefulEvictionTask{Reason: ApplicationFailureReason, PurgeMode: app.PurgeMode}
		switch app.PurgeMode {
		case policyv1alpha1.PurgeModeDirectly, policyv1alpha1.PurgeModeImmediately:
			task.Message = "the workload stayed unhealthy there past its tolerationSeconds; its copy goes at once, and the cluster takes no replicas until the substitute is healthy"
		case policyv1alpha1.PurgeModeNever:
			yes := true
			task.SuppressDeletion = &yes
			task.Message = "the workload stayed unhealthy there past its tolerationSeconds; its copy stays until suppressDeletion is set to false"
		default:
			task.PurgeMode = policyv1alpha1.PurgeModeGracefully
			task.GracePeriodSeconds = app.GracePeriodSeconds
			task.Message = "the workload stayed unhealthy there past its tolerationSeconds; its copy stays until the substitute is healthy"
		}
		for _, name := range d.AppEvicted {
			add(name, task)
		}
	}
	if GracefulPurge(f) {
		mode := policyv1alpha1.PurgeModeGracefully
		if f.Cluster != nil && f.Cluster.PurgeMode != "" {
			mode = f.Cluster.PurgeMode
		}
		for _, name := range d.Evicted {
			add(name, workv1alpha1.GracefulEvictionTask{Reason: EvictionReason, PurgeMode: mode,
				Message: fmt.Sprintf("cluster %s unhealthy past the binding's tolerations; its copy stays until the substitute is healthy", name)})
		}
	} else if f != nil {
		// Directly: the copy goes at once and needs no task, but for one to carry the state preserved from it.
		for _, name := range d.Evicted {
			if len(d.Preserved[name]) > 0 {
				add(name, workv1alpha1.GracefulEvictionTask{Reason: EvictionReason, PurgeMode: policyv1alpha1.PurgeModeDirectly,
					Message: fmt.Sprintf("cluster %s unhealthy past the binding's tolerations; its copy goes at once, and the state preserved from it goes to the substitute", name)})
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
