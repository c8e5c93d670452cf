package cluster

import (
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
// they are, and so is the timeAdded of a taint already there. An unknown (or missing) condition changes nothing.
// changed says whether the result differs from taints.
func desiredTaints(taints []corev1.Taint, ready *metav1.Condition, now metav1.Time) (out []corev1.Taint, changed bool) {
	if ready == nil || ready.Status == metav1.ConditionUnknown {
		return taints, false
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
		effect, ok := want[key]
		if !ok {
			continue
		}
		t := corev1.Taint{Key: key, Effect: effect}
		if effect == corev1.TaintEffectNoExecute {
			// Failover counts a binding's toleration for it (or the default 300 s) from here.
			t.TimeAdded = &now
		}
		out = append(out, t)
		changed = true
	}
	if len(out) == 0 && len(taints) == 0 {
		out = taints // keep nil as nil, so an unchanged spec compares equal
	}
	return out, changed
}
