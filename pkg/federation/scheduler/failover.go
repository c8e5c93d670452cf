package scheduler

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
)

// The readiness taint keys: a binding's clusterTolerations name them to say how long it stays on an unhealthy
// cluster (effect NoExecute, with tolerationSeconds), as in Karmada; a toleration of Karmada's keys
// (cluster.karmada.io/not-ready, /unreachable) counts as one of these (tolerates). They match the taints the
// Cluster controller (pkg/federation/cluster) puts on such clusters; failover also derives them from the Ready
// condition itself, so it does not depend on those taints being there.
const (
	// NotReadyTaintKey: the member answers, but not ok; failover reads a Ready condition that is False as this
	// taint.
	NotReadyTaintKey = names.NotReadyTaint
	// UnreachableTaintKey: the member does not answer. The Cluster controller taints it so, NoExecute, with Ready
	// False (reason ClusterNotReachable); failover reads a Ready condition that is Unknown as this taint too.
	UnreachableTaintKey = names.UnreachableTaint
)

// DefaultToleration is how long a binding stays on an unhealthy cluster when none of its tolerations says.
const DefaultToleration = 300 * time.Second

// FailoverInput is what a failover decision depends on.
type FailoverInput struct {
	// Failover is the binding's failover behavior; nil disables failover, and any value enables cluster failover:
	// an evicted cluster is dropped from the binding (its copy kept for a while with purgeMode Gracefully, see
	// EvictionTasks). Nothing here reads statePreservation or application failover.
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

// Failover decides which of the binding's clusters must be left, when failover is on, from the clusters' NoExecute
// taints and the binding's tolerations. A readiness taint (see readinessTaints) no toleration covers evicts
// DefaultToleration after it was added, as with Karmada's default tolerations; any other taint no toleration
// covers evicts at once. The first toleration that matches a taint says how long: with tolerationSeconds, it evicts
// that long after the taint was added (now, for one not stamped with timeAdded yet); without, it tolerates forever.
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
		evictAt, ok := evictionTime(c, in.Tolerations, grace, in.Now)
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

// evictionTime is when c's NoExecute taints stop being tolerated, counting a taint not stamped with timeAdded yet
// from now (addedAt); ok is false when they are tolerated forever, or there are none, or when c's Ready condition
// changed is not known.
func evictionTime(c *Cluster, tolerations []corev1.Toleration, grace time.Duration, now time.Time) (at time.Time, ok bool) {
	taints := readinessTaints(c)
	for _, t := range c.Taints {
		if t.Effect == corev1.TaintEffectNoExecute && !isReadinessTaint(t.Key) {
			taints = append(taints, t)
		}
	}
	for _, t := range taints {
		added := addedAt(&t, now)
		seconds, tolerated := tolerationOf(&t, tolerations)
		var until time.Time
		switch {
		case !tolerated && !isReadinessTaint(t.Key):
			until = added // a taint of the cluster's own that nothing tolerates, say a drain: at once
		case tolerated && seconds == nil:
			continue
		case added.IsZero():
			continue // a Ready condition without a transition time: nothing to count from
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

// readinessTaints are the NoExecute taints that say c is unhealthy: its own not-ready and unreachable taints that
// have a timeAdded or, when it has none, the one its Ready condition stands for (False: not-ready, Unknown:
// unreachable), added when the condition changed. Not both: an unreachable member is also Ready False, and a
// binding that tolerates unreachable longer than not-ready must get the longer time.
func readinessTaints(c *Cluster) []corev1.Taint {
	var own []corev1.Taint
	for _, t := range c.Taints {
		if t.Effect == corev1.TaintEffectNoExecute && isReadinessTaint(t.Key) && t.TimeAdded != nil {
			own = append(own, t)
		}
	}
	if len(own) > 0 {
		return own
	}
	since := metav1.NewTime(c.ReadyChanged)
	switch c.Ready {
	case metav1.ConditionFalse:
		return []corev1.Taint{{Key: NotReadyTaintKey, Effect: corev1.TaintEffectNoExecute, TimeAdded: &since}}
	case metav1.ConditionUnknown:
		return []corev1.Taint{{Key: UnreachableTaintKey, Effect: corev1.TaintEffectNoExecute, TimeAdded: &since}}
	}
	return nil
}

func isReadinessTaint(key string) bool { return key == NotReadyTaintKey || key == UnreachableTaintKey }
