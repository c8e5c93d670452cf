package eviction

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

// DefaultTimeout is how long a task waits for a healthy substitute when it names no grace period, as Karmada's
// --graceful-eviction-timeout.
const DefaultTimeout = 10 * time.Minute

// Why a task is done.
const (
	DoneHealthy    = "the substitute is healthy"
	DoneTimedOut   = "the grace period is over"
	DoneUnsuppress = "suppressDeletion was cleared"
)

// Verdict is what Assess decided for a binding's tasks.
type Verdict struct {
	// Keep are the tasks still waiting, in their order.
	Keep []workv1alpha1.GracefulEvictionTask
	// Changed is whether Keep differs from the binding's tasks: some are done, or got their creation time.
	Changed bool
	// Done maps each cluster whose task is done to why.
	Done map[string]string
	// RecheckAfter is when the first kept task's grace period ends; 0 when none will.
	RecheckAfter time.Duration
}

// Assess decides which of b's eviction tasks are done at now: a task with suppressDeletion true waits for a
// person (false ends it); any other ends once the substitute is healthy (SubstituteHealthy) or its grace period
// (gracePeriodSeconds, else timeout) since its creation is over. A task without a creation time (made by a person
// or a tool) is stamped now, as Karmada does, and its grace period counts from then.
func Assess(b *workv1alpha1.ResourceBinding, now time.Time, timeout time.Duration) Verdict {
	v := Verdict{Done: map[string]string{}}
	healthy := SubstituteHealthy(b)
	for _, t := range b.Spec.GracefulEvictionTasks {
		if t.SuppressDeletion != nil {
			if *t.SuppressDeletion {
				v.Keep = append(v.Keep, t)
			} else {
				v.Done[t.FromCluster] = DoneUnsuppress
			}
			continue
		}
		if healthy {
			v.Done[t.FromCluster] = DoneHealthy
			continue
		}
		if t.CreationTimestamp == nil {
			stamp := metav1.NewTime(now)
			t.CreationTimestamp = &stamp
			v.Changed = true
		}
		grace := timeout
		if t.GracePeriodSeconds != nil {
			grace = time.Duration(*t.GracePeriodSeconds) * time.Second
		}
		left := t.CreationTimestamp.Add(grace).Sub(now)
		if left <= 0 {
			v.Done[t.FromCluster] = DoneTimedOut
			continue
		}
		v.Keep = append(v.Keep, t)
		if v.RecheckAfter == 0 || left < v.RecheckAfter {
			v.RecheckAfter = left
		}
	}
	v.Changed = v.Changed || len(v.Done) > 0
	return v
}

// SubstituteHealthy reports whether b's workload is up where it is now: the scheduler placed b's current spec,
// its Works are applied for it (FullyApplied True at b's generation), and every target cluster reports the
// workload applied and healthy.
func SubstituteHealthy(b *workv1alpha1.ResourceBinding) bool {
	if b.Status.SchedulerObservedGeneration != b.Generation || len(b.Spec.Clusters) == 0 {
		return false
	}
	c := meta.FindStatusCondition(b.Status.Conditions, workv1alpha1.ConditionFullyApplied)
	if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != b.Generation {
		return false
	}
	for _, tc := range b.Spec.Clusters {
		ok := false
		for _, item := range b.Status.AggregatedStatus {
			if item.ClusterName == tc.Name {
				ok = item.Applied && item.Health == workv1alpha1.ResourceHealthy
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}
