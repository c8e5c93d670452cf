package cluster

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
)

// Reasons of the Ready condition.
const (
	// ReasonReady: the member's /readyz answered ok.
	ReasonReady = "ClusterReady"
	// ReasonNotReady: the member's API server answered, but not ok (or refused the federation's credentials).
	ReasonNotReady = "ClusterNotReady"
	// ReasonNotReachable: the member's API server did not answer at all.
	ReasonNotReachable = "ClusterNotReachable"
	// ReasonConfigInvalid: no client could be built from the Cluster and its Secret (e.g. the Secret is missing).
	ReasonConfigInvalid = "ClusterConfigInvalid"
)

// Outcome is what one health probe found.
type Outcome int

// The outcomes of a probe.
const (
	Healthy       Outcome = iota // /readyz answered ok
	Unhealthy                    // the API server answered, but not ok
	Unreachable                  // no answer at all
	Misconfigured                // no client could be built: nothing was asked
)

func (o Outcome) String() string {
	switch o {
	case Healthy:
		return "healthy"
	case Unhealthy:
		return "unhealthy"
	case Unreachable:
		return "unreachable"
	default:
		return "misconfigured"
	}
}

// ProbeResult is one health probe of a member.
type ProbeResult struct {
	Outcome Outcome
	// Message says what failed; empty when healthy.
	Message string
}

func (p ProbeResult) reason() string {
	switch p.Outcome {
	case Healthy:
		return ReasonReady
	case Unreachable:
		return ReasonNotReachable
	case Misconfigured:
		return ReasonConfigInvalid
	default:
		return ReasonNotReady
	}
}

// readyCondition is the Ready condition to hold after probe p, where failures counts the failed probes in a row,
// this one included. A Ready cluster stays Ready until threshold probes in a row failed, so one lost request does
// not flap it (and evict its workloads); a cluster not yet Ready reports every probe at once, good or bad.
// lastTransitionTime is left to meta.SetStatusCondition, which keeps it while the status stays the same.
func readyCondition(current *metav1.Condition, p ProbeResult, failures, threshold int, generation int64) metav1.Condition {
	if p.Outcome != Healthy && current != nil && current.Status == metav1.ConditionTrue && failures < threshold {
		return *current
	}
	c := metav1.Condition{
		Type:               clusterv1alpha1.ClusterConditionReady,
		Status:             metav1.ConditionFalse,
		Reason:             p.reason(),
		Message:            p.Message,
		ObservedGeneration: generation,
	}
	if p.Outcome == Healthy {
		c.Status = metav1.ConditionTrue
		c.Message = "the cluster's API server is ready"
	}
	return c
}

// IsReady says whether c's Ready condition is True.
func IsReady(c *clusterv1alpha1.Cluster) bool {
	return meta.IsStatusConditionTrue(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
}

// NotReadySince is when c stopped being Ready: the last transition of a Ready condition that is not True. It is
// false while c is Ready and for a cluster never probed (no Ready condition), whose health is not known.
func NotReadySince(c *clusterv1alpha1.Cluster) (time.Time, bool) {
	cond := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
	if cond == nil || cond.Status == metav1.ConditionTrue {
		return time.Time{}, false
	}
	return cond.LastTransitionTime.Time, true
}
