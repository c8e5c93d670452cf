package scheduler

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/selector"
)

// matchAffinity says why c does not match a, or "" when it does. A nil affinity matches every cluster.
func matchAffinity(a *policyv1alpha1.ClusterAffinity, c *Cluster) string {
	if a == nil {
		return ""
	}
	if slices.Contains(a.ExcludeClusters, c.Name) {
		return "excluded by name"
	}
	if len(a.ClusterNames) > 0 && !slices.Contains(a.ClusterNames, c.Name) {
		return "not in clusterNames"
	}
	if a.LabelSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(a.LabelSelector)
		if err != nil {
			return fmt.Sprintf("invalid labelSelector: %v", err)
		}
		if !sel.Matches(labels.Set(c.Labels)) {
			return "labels do not match labelSelector"
		}
	}
	if a.FieldSelector != nil {
		fields := selector.ClusterFields{Provider: c.Provider, Region: c.Region, Zones: c.Zones}
		for _, e := range a.FieldSelector.MatchExpressions {
			ok, err := fields.Match(e)
			if err != nil {
				return fmt.Sprintf("invalid fieldSelector: %v", err)
			}
			if !ok {
				return fmt.Sprintf("fieldSelector %s %s %v does not match", e.Key, e.Operator, e.Values)
			}
		}
	}
	return ""
}

// untolerated is the first taint of c with one of effects that no toleration tolerates at now, or nil. A NoExecute
// toleration with tolerationSeconds stops tolerating that long after the taint was added.
func untolerated(c *Cluster, tolerations []corev1.Toleration, now time.Time, effects ...corev1.TaintEffect) *corev1.Taint {
	for i := range c.Taints {
		t := &c.Taints[i]
		if !slices.Contains(effects, t.Effect) {
			continue
		}
		if _, tolerated := tolerationOf(t, tolerations); !tolerated || expired(t, tolerations, now) {
			return t
		}
	}
	return nil
}

// tolerationOf says how long tolerations tolerate t: ok is false when none does; seconds is nil when it is
// tolerated forever (any toleration does, for effects other than NoExecute), else the tolerationSeconds of the
// first toleration that matches, whatever later ones say, as Kubernetes' taint manager and Karmada count.
func tolerationOf(t *corev1.Taint, tolerations []corev1.Toleration) (seconds *int64, ok bool) {
	for i := range tolerations {
		tol := &tolerations[i]
		if !tolerates(tol, t) {
			continue
		}
		if t.Effect != corev1.TaintEffectNoExecute {
			return nil, true
		}
		return tol.TolerationSeconds, true
	}
	return nil, false
}

// expired reports whether the time-limited toleration of t ran out at now.
func expired(t *corev1.Taint, tolerations []corev1.Toleration, now time.Time) bool {
	seconds, ok := tolerationOf(t, tolerations)
	if !ok || seconds == nil {
		return false
	}
	return !now.Before(addedAt(t, now).Add(time.Duration(max(*seconds, 0)) * time.Second))
}

// addedAt is when t was added. A taint without timeAdded (a person's, written with kubectl) counts as added now:
// the Cluster controller stamps every NoExecute taint with the time it first saw it, and the bindings are looked at
// again then. Counted so until it does, a time-limited toleration never runs out early, nor lasts forever.
func addedAt(t *corev1.Taint, now time.Time) time.Time {
	if t.TimeAdded == nil {
		return now
	}
	return t.TimeAdded.Time
}

// karmadaTaintAliases maps Karmada's readiness taint keys to fedmesh's: policies ported from Karmada name Karmada's
// keys in clusterTolerations, and would otherwise tolerate nothing here (and fail over after the default 300s).
var karmadaTaintAliases = map[string]string{
	"cluster.karmada.io/not-ready":   NotReadyTaintKey,
	"cluster.karmada.io/unreachable": UnreachableTaintKey,
}

// tolerates says whether tol tolerates t, a toleration of a Karmada readiness key also tolerating fedmesh's taint
// of that meaning. It still matches its own key literally: a Cluster copied from Karmada may carry Karmada's taints.
func tolerates(tol *corev1.Toleration, t *corev1.Taint) bool {
	if tol.ToleratesTaint(klog.Background(), t, false) {
		return true
	}
	alias, ok := karmadaTaintAliases[tol.Key]
	if !ok {
		return false
	}
	aliased := *tol
	aliased.Key = alias
	return aliased.ToleratesTaint(klog.Background(), t, false)
}
