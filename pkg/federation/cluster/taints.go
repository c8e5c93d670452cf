package cluster

import (
	"slices"

	"github.com/fedmesh/fedmesh/pkg/federation/names"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Taint keys the controller puts on Clusters in spec.taints.
const (
	TaintNotReady    = names.NotReadyTaint
	TaintUnreachable = names.UnreachableTaint
)

// desiredTaints is taints with the controller's own taints set for the Ready condition ready: none when Ready,
// not-ready when not Ready, and unreachable too when the reason is ClusterNotReachable. Other taints are kept as
// they are, and so is the timeAdded of a taint already there. An unknown (or missing) condition leaves the
// controller's own taints as they are. Whatever ready is, every NoExecute taint without timeAdded gets now
// (stampTimeAdded). changed says whether the result differs from taints, which are not modified.
func desiredTaints(taints []corev1.Taint, ready *metav1.Condition, now metav1.Time) (out []corev1.Taint, changed bool) {
	if ready == nil || ready.Status == metav1.ConditionUnknown {
		return stampTimeAdded(taints, now)
	}
	want := map[string]corev1.TaintEffect{}
	if ready.Status == metav1.ConditionFalse {
		want[TaintNotReady] = corev1.TaintEffectNoSchedule
		if ready.Reason == ReasonNotReachable {
			want[TaintUnreachable] = corev1.TaintEffectNoExecute
		}
	}
	out = make([]corev1.Taint, 0, len(taints)+len(want))
	for _, t := range taints {
		if t.Key != TaintNotReady && t.Key != TaintUnreachable {
			out = append(out, t)
			continue
		}
		effect, ok := want[t.Key]
		if !ok || t.Effect != effect {
			// Not wanted, or wanted with another effect (someone edited it): dropped, or re-added below.
			changed = true
			continue
		}
		delete(want, t.Key)
		out = append(out, t)
	}
	for _, key := range []string{TaintNotReady, TaintUnreachable} {
		if effect, ok := want[key]; ok {
			out = append(out, corev1.Taint{Key: key, Effect: effect}) // a NoExecute one is stamped below
			changed = true
		}
	}
	if len(out) == 0 && len(taints) == 0 {
		out = taints // keep nil as nil, so an unchanged spec compares equal
	}
	out, stamped := stampTimeAdded(out, now)
	return out, changed || stamped
}

// stampTimeAdded gives every NoExecute taint without timeAdded now, as Karmada's API does on every write: failover
// counts a binding's tolerationSeconds for a taint from its timeAdded, and a person's drain written with kubectl
// has none. A timeAdded already set (the person's own, or an earlier stamp) is never changed, so the stamp cannot
// undo a later edit. taints is not modified; changed says whether any taint was stamped.
func stampTimeAdded(taints []corev1.Taint, now metav1.Time) (out []corev1.Taint, changed bool) {
	out = taints
	for i, t := range taints {
		if !unstamped(t) {
			continue
		}
		if !changed {
			out = slices.Clone(taints)
			changed = true
		}
		out[i].TimeAdded = &now
	}
	return out, changed
}

// unstamped says whether t is a NoExecute taint without timeAdded, which stampTimeAdded stamps.
func unstamped(t corev1.Taint) bool {
	return t.Effect == corev1.TaintEffectNoExecute && t.TimeAdded == nil
}
