package scheduler

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
)

// The taint keys a binding's clusterTolerations name to say how long it stays on an unhealthy cluster (effect
// NoExecute, with tolerationSeconds), as in Karmada. They match the taints the Cluster controller
// (pkg/federation/cluster) puts on such clusters; failover also derives them from the Ready condition itself, so it
// does not depend on those taints being there.
const (
	// NotReadyTaintKey stands for a Ready condition that is False.
	NotReadyTaintKey = names.NotReadyTaint
	// UnreachableTaintKey stands for a Ready condition that is Unknown.
	UnreachableTaintKey = names.UnreachableTaint
)

// DefaultToleration is how long a binding stays on an unhealthy cluster when none of its tolerations says.
const DefaultToleration = 300 * time.Second

// FailoverInput is what a failover decision depends on.
type FailoverInput struct {
	// Failover is the binding's failover behavior; nil disables failover (the policy's API says so), and any
	// value enables cluster failover (an unset cluster part means the default graceful eviction).
	Failover *policyv1alpha1.FailoverBehavior
	// Clusters are the member clusters.
	Clusters []Cluster
	// Targets are the binding's current clusters.
	Targets []workv1alpha1.TargetCluster
	// Tolerations are the binding's placement.clusterTolerations.
	Tolerations []corev1.Toleration
	// DefaultToleration applies to an unhealthy cluster no toleration covers; 0 means DefaultToleration.
	DefaultToleration time.Duration
	Now               time.Time
}

// FailoverDecision is which target clusters to leave now, and when to look again.
type FailoverDecision struct {
	// Evict are the target clusters that stayed unhealthy (or NoExecute-tainted) past the binding's tolerations.
	Evict []string
	// RecheckAfter is when the next toleration of a target cluster runs out; 0 when none is running.
	RecheckAfter time.Duration
}

// Failover decides which of the binding's clusters must be left, when failover is on: a cluster whose Ready condition is False (or
// Unknown) is treated as tainted NoExecute with NotReadyTaintKey (UnreachableTaintKey) since the condition
// changed, alongside the cluster's own NoExecute taints. A taint no toleration covers evicts at once — except the
// readiness ones, which get DefaultToleration; a toleration with tolerationSeconds evicts that long after the
// taint was added; one without tolerates forever.
func Failover(in FailoverInput) FailoverDecision {
	var d FailoverDecision
	if in.Failover == nil {
		return d
	}
	grace := in.DefaultToleration
	if grace == 0 {
		grace = DefaultToleration
	}
	byName := map[string]*Cluster{}
	for i := range in.Clusters {
		byName[in.Clusters[i].Name] = &in.Clusters[i]
	}
	for _, target := range in.Targets {
		c, ok := byName[target.Name]
		if !ok {
			continue // a deleted cluster is no candidate anyway
		}
		evictAt, ok := evictionTime(c, in.Tolerations, grace)
		switch {
		case !ok:
		case !in.Now.Before(evictAt):
			d.Evict = append(d.Evict, c.Name)
		case d.RecheckAfter == 0 || evictAt.Sub(in.Now) < d.RecheckAfter:
			d.RecheckAfter = evictAt.Sub(in.Now)
		}
	}
	return d
}

// evictionTime is when c's NoExecute taints stop being tolerated; ok is false when they are tolerated forever, or
// there are none, or when they were added is not known.
func evictionTime(c *Cluster, tolerations []corev1.Toleration, grace time.Duration) (at time.Time, ok bool) {
	taints := healthTaints(c)
	health := len(taints)
	for _, t := range c.Taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			taints = append(taints, t)
		}
	}
	for i, t := range taints {
		var added time.Time
		if t.TimeAdded != nil {
			added = t.TimeAdded.Time
		}
		seconds, tolerated := tolerationOf(&t, tolerations)
		var until time.Time
		switch {
		case !tolerated && i >= health:
			until = added // a taint of the cluster's own that nothing tolerates: now
		case tolerated && seconds == nil:
			continue
		case added.IsZero():
			continue // no time to count from
		case !tolerated:
			until = added.Add(grace)
		default:
			until = added.Add(time.Duration(max(*seconds, 0)) * time.Second)
		}
		if !ok || until.Before(at) {
			at, ok = until, true
		}
	}
	return at, ok
}

// healthTaints are the NoExecute taints c's Ready condition stands for.
func healthTaints(c *Cluster) []corev1.Taint {
	since := metav1.NewTime(c.ReadyChanged)
	switch c.Ready {
	case metav1.ConditionFalse:
		return []corev1.Taint{{Key: NotReadyTaintKey, Effect: corev1.TaintEffectNoExecute, TimeAdded: &since}}
	case metav1.ConditionUnknown:
		return []corev1.Taint{{Key: UnreachableTaintKey, Effect: corev1.TaintEffectNoExecute, TimeAdded: &since}}
	}
	return nil
}
