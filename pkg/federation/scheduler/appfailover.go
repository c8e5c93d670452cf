package scheduler

import (
	"time"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

// ApplicationFailureReason is the reason of a task application failover makes for a cluster it moved a workload
// off.
const ApplicationFailureReason = "ApplicationFailure"

// AppFailoverInput is what an application failover decision depends on.
type AppFailoverInput struct {
	// Failover is the binding's failover behavior; application failover acts when it has Application.
	Failover *policyv1alpha1.FailoverBehavior
	// Targets are the binding's current clusters.
	Targets []workv1alpha1.TargetCluster
	// Status is the binding's aggregated status: each cluster's health of the workload.
	Status []workv1alpha1.AggregatedStatusItem
	// UnhealthySince is when each target was first seen unhealthy, as the previous decision returned it.
	UnhealthySince map[string]time.Time
	Now            time.Time
}

// AppFailoverDecision is which target clusters the workload leaves now, and what to remember.
type AppFailoverDecision struct {
	// Evict are the target clusters where the workload stayed Unhealthy past tolerationSeconds.
	Evict []string
	// UnhealthySince is the input's, for the targets still Unhealthy (a target seen so now for the first time
	// starts its count now); pass it to the next decision.
	UnhealthySince map[string]time.Time
	// RecheckAfter is when the next toleration runs out; 0 when none is running.
	RecheckAfter time.Duration
}

// ApplicationFailover decides which target clusters a workload leaves because it is unhealthy there, as Karmada's
// application failover: a target whose status item says Unhealthy (not Unknown: no report is no verdict)
// continuously for decisionConditions.tolerationSeconds is left. The count starts when this federator first sees
// the item Unhealthy, so a restart starts it again. Whether the workload has somewhere to go is the caller's to
// judge (it needs the clusters).
func ApplicationFailover(in AppFailoverInput) AppFailoverDecision {
	var out AppFailoverDecision
	if in.Failover == nil || in.Failover.Application == nil {
		return out
	}
	toleration := 300 * time.Second // Karmada's default
	if s := in.Failover.Application.DecisionConditions.TolerationSeconds; s != nil {
		toleration = time.Duration(*s) * time.Second
	}
	health := map[string]workv1alpha1.ResourceHealth{}
	for _, item := range in.Status {
		health[item.ClusterName] = item.Health
	}
	for _, t := range in.Targets {
		if health[t.Name] != workv1alpha1.ResourceUnhealthy {
			continue
		}
		since, seen := in.UnhealthySince[t.Name]
		if !seen {
			since = in.Now
		}
		if out.UnhealthySince == nil {
			out.UnhealthySince = map[string]time.Time{}
		}
		out.UnhealthySince[t.Name] = since
		left := since.Add(toleration).Sub(in.Now)
		if left <= 0 {
			out.Evict = append(out.Evict, t.Name)
			continue
		}
		if out.RecheckAfter == 0 || left < out.RecheckAfter {
			out.RecheckAfter = left
		}
	}
	return out
}

// ApplicationEvicted are the clusters of tasks application failover made: while its task lasts, a cluster the
// workload left for being unhealthy there is no candidate, so the workload does not go straight back.
func ApplicationEvicted(tasks []workv1alpha1.GracefulEvictionTask) []string {
	var out []string
	for _, t := range tasks {
		if t.Reason == ApplicationFailureReason {
			out = append(out, t.FromCluster)
		}
	}
	return out
}

// KeepsCopy reports whether the copy on t's cluster stays while t lasts: not with purgeMode Directly (or
// Immediately), whose task keeps an application failover's cluster out of scheduling, or carries state preserved
// from the cluster.
func KeepsCopy(t workv1alpha1.GracefulEvictionTask) bool {
	switch t.PurgeMode {
	case policyv1alpha1.PurgeModeDirectly, policyv1alpha1.PurgeModeImmediately:
		return false
	}
	return true
}
