package cluster

import (
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
)

func TestReadyCondition(t *testing.T) {
	ready := &metav1.Condition{Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionTrue, Reason: ReasonReady, Message: "ok", ObservedGeneration: 1}
	notReady := &metav1.Condition{Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionFalse, Reason: ReasonNotReachable, Message: "refused", ObservedGeneration: 1}
	healthy := ProbeResult{Outcome: Healthy}
	refused := ProbeResult{Outcome: Unreachable, Message: "connection refused"}
	failing := ProbeResult{Outcome: Unhealthy, Message: "/readyz answered 500"}
	noSecret := ProbeResult{Outcome: Misconfigured, Message: "secret not found"}
	for _, tc := range []struct {
		name       string
		current    *metav1.Condition
		probe      ProbeResult
		failures   int
		wantStatus metav1.ConditionStatus
		wantReason string
		wantMsg    string
	}{
		{"first probe healthy", nil, healthy, 0, metav1.ConditionTrue, ReasonReady, "the cluster's API server is ready"},
		{"first probe failing: reported at once", nil, refused, 1, metav1.ConditionFalse, ReasonNotReachable, "connection refused"},
		{"ready, one blip: held", ready, refused, 1, metav1.ConditionTrue, ReasonReady, "ok"},
		{"ready, failures below threshold: held", ready, failing, 2, metav1.ConditionTrue, ReasonReady, "ok"},
		{"ready, threshold reached", ready, failing, 3, metav1.ConditionFalse, ReasonNotReady, "/readyz answered 500"},
		{"not ready, one good probe: ready at once", notReady, healthy, 0, metav1.ConditionTrue, ReasonReady, "the cluster's API server is ready"},
		{"not ready, another failure reason: updated at once", notReady, failing, 1, metav1.ConditionFalse, ReasonNotReady, "/readyz answered 500"},
		{"no client", notReady, noSecret, 7, metav1.ConditionFalse, ReasonConfigInvalid, "secret not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := readyCondition(tc.current, tc.probe, tc.failures, 3, 2)
			if got.Type != clusterv1alpha1.ClusterConditionReady || got.Status != tc.wantStatus || got.Reason != tc.wantReason || got.Message != tc.wantMsg {
				t.Errorf("got %s %s %q, want %s %s %q", got.Type, got.Status, got.Message, tc.wantStatus, tc.wantReason, tc.wantMsg)
			}
		})
	}
}

// TestOutageSequence plays probes through the condition and taint logic the way the controller chains them, with
// threshold 2: the cluster is tainted only once the threshold is reached, and lastTransitionTime and the taint's
// timeAdded stay put while nothing changes.
func TestOutageSequence(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	user := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	var (
		conds    []metav1.Condition
		taints   = []corev1.Taint{user}
		failures int
	)
	for i, step := range []struct {
		probe      ProbeResult
		wantStatus metav1.ConditionStatus
		wantTaints []string // besides the user's, in order
		wantChange bool
		wantSince  int // index of the step whose time lastTransitionTime holds
	}{
		{ProbeResult{Outcome: Healthy}, metav1.ConditionTrue, nil, false, 0},
		{ProbeResult{Outcome: Unreachable}, metav1.ConditionTrue, nil, false, 0},
		{ProbeResult{Outcome: Healthy}, metav1.ConditionTrue, nil, false, 0},
		{ProbeResult{Outcome: Unreachable}, metav1.ConditionTrue, nil, false, 0},
		{ProbeResult{Outcome: Unreachable}, metav1.ConditionFalse, []string{TaintNotReady, TaintUnreachable}, true, 4},
		{ProbeResult{Outcome: Unreachable}, metav1.ConditionFalse, []string{TaintNotReady, TaintUnreachable}, false, 4},
		{ProbeResult{Outcome: Unhealthy}, metav1.ConditionFalse, []string{TaintNotReady}, true, 4},
		{ProbeResult{Outcome: Healthy}, metav1.ConditionTrue, nil, true, 7},
	} {
		now := metav1.NewTime(t0.Add(time.Duration(i) * time.Minute))
		if step.probe.Outcome == Healthy {
			failures = 0
		} else {
			failures++
		}
		prev := meta.FindStatusCondition(conds, clusterv1alpha1.ClusterConditionReady).DeepCopy()
		next := readyCondition(prev, step.probe, failures, 2, 1)
		next.LastTransitionTime = now // what SetStatusCondition stamps on a change
		meta.SetStatusCondition(&conds, next)
		ready := meta.FindStatusCondition(conds, clusterv1alpha1.ClusterConditionReady)
		var changed bool
		taints, changed = desiredTaints(taints, ready, now)

		if ready.Status != step.wantStatus {
			t.Errorf("step %d: ready %s, want %s", i, ready.Status, step.wantStatus)
		}
		if want := t0.Add(time.Duration(step.wantSince) * time.Minute); !ready.LastTransitionTime.Time.Equal(want) {
			t.Errorf("step %d: lastTransitionTime %v, want %v", i, ready.LastTransitionTime.Time, want)
		}
		if changed != step.wantChange {
			t.Errorf("step %d: taints changed %v, want %v", i, changed, step.wantChange)
		}
		if taints[0] != user {
			t.Errorf("step %d: the user's taint became %v", i, taints[0])
		}
		var keys []string
		for _, tt := range taints[1:] {
			keys = append(keys, tt.Key)
			if tt.Key == TaintUnreachable && (tt.TimeAdded == nil || !tt.TimeAdded.Time.Equal(t0.Add(4*time.Minute))) {
				t.Errorf("step %d: unreachable taint added at %v, want step 4's time", i, tt.TimeAdded)
			}
		}
		if len(keys) != len(step.wantTaints) || (len(keys) > 0 && keys[0] != step.wantTaints[0]) || (len(keys) > 1 && keys[1] != step.wantTaints[1]) {
			t.Errorf("step %d: taints %v, want %v", i, keys, step.wantTaints)
		}
	}
}

func TestDesiredTaints(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	earlier := metav1.NewTime(now.Add(-time.Hour))
	cond := func(s metav1.ConditionStatus, reason string) *metav1.Condition {
		return &metav1.Condition{Type: clusterv1alpha1.ClusterConditionReady, Status: s, Reason: reason}
	}
	notReady := corev1.Taint{Key: TaintNotReady, Effect: corev1.TaintEffectNoSchedule}
	unreachable := corev1.Taint{Key: TaintUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &now}
	unreachableEarlier := corev1.Taint{Key: TaintUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &earlier}
	other := corev1.Taint{Key: "other", Effect: corev1.TaintEffectNoSchedule}
	// A drain a person wrote with kubectl: the controller stamps it with the time it first sees it, as Karmada's API
	// does on write, so that a binding's tolerationSeconds for it count from then.
	drain := corev1.Taint{Key: "drain", Effect: corev1.TaintEffectNoExecute}
	drainStamped := corev1.Taint{Key: "drain", Effect: corev1.TaintEffectNoExecute, TimeAdded: &now}
	drainEarlier := corev1.Taint{Key: "drain", Effect: corev1.TaintEffectNoExecute, TimeAdded: &earlier}
	for _, tc := range []struct {
		name        string
		taints      []corev1.Taint
		ready       *metav1.Condition
		want        []corev1.Taint
		wantChanged bool
	}{
		{"never probed", []corev1.Taint{other}, nil, []corev1.Taint{other}, false},
		{"unknown", []corev1.Taint{notReady}, cond(metav1.ConditionUnknown, ""), []corev1.Taint{notReady}, false},
		{"ready, untainted", nil, cond(metav1.ConditionTrue, ReasonReady), nil, false},
		{"ready again", []corev1.Taint{notReady, other, unreachableEarlier}, cond(metav1.ConditionTrue, ReasonReady), []corev1.Taint{other}, true},
		{"not ready", []corev1.Taint{other}, cond(metav1.ConditionFalse, ReasonNotReady), []corev1.Taint{other, notReady}, true},
		{"not ready, no client", nil, cond(metav1.ConditionFalse, ReasonConfigInvalid), []corev1.Taint{notReady}, true},
		{"unreachable", nil, cond(metav1.ConditionFalse, ReasonNotReachable), []corev1.Taint{notReady, unreachable}, true},
		{"still unreachable keeps timeAdded", []corev1.Taint{notReady, unreachableEarlier}, cond(metav1.ConditionFalse, ReasonNotReachable),
			[]corev1.Taint{notReady, unreachableEarlier}, false},
		{"reachable but not ready", []corev1.Taint{unreachableEarlier, notReady}, cond(metav1.ConditionFalse, ReasonNotReady), []corev1.Taint{notReady}, true},
		{"own key with an edited effect is restored", []corev1.Taint{{Key: TaintNotReady, Effect: corev1.TaintEffectNoExecute}},
			cond(metav1.ConditionFalse, ReasonNotReady), []corev1.Taint{notReady}, true},
		{"never probed, a drain is stamped", []corev1.Taint{other, drain}, nil, []corev1.Taint{other, drainStamped}, true},
		{"unknown, a drain is stamped", []corev1.Taint{notReady, drain}, cond(metav1.ConditionUnknown, ""), []corev1.Taint{notReady, drainStamped}, true},
		{"ready, a drain is stamped", []corev1.Taint{drain}, cond(metav1.ConditionTrue, ReasonReady), []corev1.Taint{drainStamped}, true},
		{"unreachable, a drain is stamped too", []corev1.Taint{drain}, cond(metav1.ConditionFalse, ReasonNotReachable),
			[]corev1.Taint{drainStamped, notReady, unreachable}, true},
		{"a drain's timeAdded is kept", []corev1.Taint{drainEarlier}, cond(metav1.ConditionTrue, ReasonReady), []corev1.Taint{drainEarlier}, false},
		{"own unreachable taint stripped of its timeAdded is stamped", []corev1.Taint{notReady, {Key: TaintUnreachable, Effect: corev1.TaintEffectNoExecute}},
			cond(metav1.ConditionFalse, ReasonNotReachable), []corev1.Taint{notReady, unreachable}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.taints)
			got, changed := desiredTaints(tc.taints, tc.ready, now)
			if !reflect.DeepEqual(in, tc.taints) {
				t.Errorf("the taints given were changed: %v, then %v", in, tc.taints)
			}
			if changed != tc.wantChanged {
				t.Errorf("changed %v, want %v", changed, tc.wantChanged)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if !got[i].MatchTaint(&tc.want[i]) || !got[i].TimeAdded.Equal(tc.want[i].TimeAdded) {
					t.Errorf("taint %d: got %v, want %v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestIsReadyAndNotReadySince(t *testing.T) {
	since := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	withReady := func(s metav1.ConditionStatus) *clusterv1alpha1.Cluster {
		c := &clusterv1alpha1.Cluster{}
		c.Status.Conditions = []metav1.Condition{{Type: clusterv1alpha1.ClusterConditionReady, Status: s, LastTransitionTime: since}}
		return c
	}
	for _, tc := range []struct {
		name      string
		cluster   *clusterv1alpha1.Cluster
		wantReady bool
		wantSince bool
	}{
		{"never probed", &clusterv1alpha1.Cluster{}, false, false},
		{"ready", withReady(metav1.ConditionTrue), true, false},
		{"not ready", withReady(metav1.ConditionFalse), false, true},
		{"unknown", withReady(metav1.ConditionUnknown), false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsReady(tc.cluster); got != tc.wantReady {
				t.Errorf("IsReady %v, want %v", got, tc.wantReady)
			}
			got, ok := NotReadySince(tc.cluster)
			if ok != tc.wantSince || (ok && !got.Equal(since.Time)) || (!ok && !got.IsZero()) {
				t.Errorf("NotReadySince %v %v, want %v", got, ok, tc.wantSince)
			}
		})
	}
}
