package appfailover

import (
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

// Task fields of an application failover, as Karmada names them.
const (
	Reason   = "ApplicationFailure"
	Producer = "fedmesh-application-failover"
)

// Defaults of failover.application, as Karmada's.
const (
	DefaultToleration  = 300 * time.Second
	DefaultGracePeriod = int32(600)
)

// Decision is what Decide found for one binding.
type Decision struct {
	// UnhealthySince is, for each target cluster whose item is Unhealthy, since when (carried over from the last
	// pass); clusters not in it are not Unhealthy.
	UnhealthySince map[string]time.Time
	// Evict are the clusters to leave now.
	Evict []string
	// RecheckAfter is when the next cluster's toleration runs out; 0 when none is running.
	RecheckAfter time.Duration
}

// Decide finds the target clusters of b that have been Unhealthy (Unknown does not count: an unready cluster is
// cluster failover's) for the toleration, given since when each was Unhealthy at the last pass. It never leaves
// every cluster: with all of them unhealthy there is nowhere known to be better.
func Decide(b *workv1alpha1.ResourceBinding, since map[string]time.Time, now time.Time) Decision {
	d := Decision{UnhealthySince: map[string]time.Time{}}
	app := application(b)
	if app == nil {
		return d
	}
	toleration := DefaultToleration
	if s := app.DecisionConditions.TolerationSeconds; s != nil {
		toleration = time.Duration(*s) * time.Second
	}
	for _, tc := range b.Spec.Clusters {
		i := slices.IndexFunc(b.Status.AggregatedStatus, func(it workv1alpha1.AggregatedStatusItem) bool { return it.ClusterName == tc.Name })
		if i < 0 || b.Status.AggregatedStatus[i].Health != workv1alpha1.ResourceUnhealthy {
			continue
		}
		first, ok := since[tc.Name]
		if !ok {
			first = now
		}
		d.UnhealthySince[tc.Name] = first
		if left := first.Add(toleration).Sub(now); left > 0 {
			if d.RecheckAfter == 0 || left < d.RecheckAfter {
				d.RecheckAfter = left
			}
			continue
		}
		d.Evict = append(d.Evict, tc.Name)
	}
	if len(d.Evict) == len(b.Spec.Clusters) {
		d.Evict = nil
	}
	return d
}

// Evict takes the clusters off spec, each with an eviction task as the purge mode says: Gracefully (the default)
// keeps the copy until the workload is healthy elsewhere or the grace period is over, Never keeps it for a person
// (suppressDeletion), Directly deletes it at once (no task). A cluster that already has a task gets no second.
func Evict(spec *workv1alpha1.ResourceBindingSpec, clusters []string, now time.Time) {
	app := spec.Failover.Application
	mode := app.PurgeMode
	if mode == "" {
		mode = policyv1alpha1.PurgeModeGracefully
	}
	created := metav1.NewTime(now)
	for _, name := range clusters {
		i := slices.IndexFunc(spec.Clusters, func(t workv1alpha1.TargetCluster) bool { return t.Name == name })
		if i < 0 {
			continue
		}
		left := spec.Clusters[i]
		spec.Clusters = slices.Delete(spec.Clusters, i, i+1)
		if slices.ContainsFunc(spec.GracefulEvictionTasks, func(t workv1alpha1.GracefulEvictionTask) bool { return t.FromCluster == name }) {
			continue
		}
		task := workv1alpha1.GracefulEvictionTask{
			FromCluster: name, Reason: Reason, Producer: Producer, PurgeMode: mode, CreationTimestamp: &created,
			Message: fmt.Sprintf("the workload stayed unhealthy in %s past the policy's tolerationSeconds", name),
		}
		if left.Replicas > 0 {
			task.Replicas = &left.Replicas
		}
		switch mode {
		case policyv1alpha1.PurgeModeDirectly, policyv1alpha1.PurgeModeImmediately:
			continue
		case policyv1alpha1.PurgeModeNever:
			suppress := true
			task.SuppressDeletion = &suppress
		default:
			grace := DefaultGracePeriod
			if app.GracePeriodSeconds != nil {
				grace = *app.GracePeriodSeconds
			}
			task.GracePeriodSeconds = &grace
		}
		spec.GracefulEvictionTasks = append(spec.GracefulEvictionTasks, task)
	}
}

func application(b *workv1alpha1.ResourceBinding) *policyv1alpha1.ApplicationFailoverBehavior {
	if b.Spec.Failover == nil {
		return nil
	}
	return b.Spec.Failover.Application
}
