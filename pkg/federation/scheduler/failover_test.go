package scheduler

import (
	"testing"
	"time"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestFailover(t *testing.T) {
	unhealthy := func(status metav1.ConditionStatus, ago time.Duration) func(*Cluster) {
		return func(c *Cluster) { c.Ready, c.ReadyChanged = status, now.Add(-ago) }
	}
	notReadyFor := func(seconds int64) corev1.Toleration {
		return corev1.Toleration{Key: NotReadyTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &seconds}
	}
	unreachableFor := func(seconds int64) corev1.Toleration {
		return corev1.Toleration{Key: UnreachableTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &seconds}
	}
	// unreachable is how the Cluster controller marks a member that does not answer: Ready False, and the
	// unreachable taint added then.
	unreachable := func(ago time.Duration) func(*Cluster) {
		return func(c *Cluster) {
			added := metav1.NewTime(now.Add(-ago))
			c.Ready, c.ReadyChanged = metav1.ConditionFalse, added.Time
			c.Taints = append(c.Taints, corev1.Taint{Key: NotReadyTaintKey, Effect: corev1.TaintEffectNoSchedule},
				corev1.Taint{Key: UnreachableTaintKey, Effect: corev1.TaintEffectNoExecute, TimeAdded: &added})
		}
	}
	drainFor := func(seconds int64) corev1.Toleration {
		return corev1.Toleration{Key: "drain", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &seconds}
	}
	drainedAgo := func(ago time.Duration) func(*Cluster) {
		added := metav1.NewTime(now.Add(-ago))
		return taint(corev1.Taint{Key: "drain", Effect: corev1.TaintEffectNoExecute, TimeAdded: &added})
	}
	tests := []struct {
		name        string
		clusters    []Cluster
		targets     []string
		tolerations []corev1.Toleration
		off         bool
		want        FailoverDecision
	}{
		{
			name:     "failover off: nothing is evicted",
			clusters: []Cluster{cluster("a", unhealthy(metav1.ConditionFalse, time.Hour))},
			targets:  []string{"a"},
			off:      true,
		},
		{
			name:     "healthy clusters stay",
			clusters: []Cluster{cluster("a"), cluster("b")},
			targets:  []string{"a", "b"},
		},
		{
			name:        "not ready within its toleration: look again when it runs out",
			clusters:    []Cluster{cluster("a", unhealthy(metav1.ConditionFalse, time.Second))},
			targets:     []string{"a"},
			tolerations: []corev1.Toleration{notReadyFor(2)},
			want:        FailoverDecision{RecheckAfter: time.Second},
		},
		{
			name:        "not ready past its toleration: evicted",
			clusters:    []Cluster{cluster("a", unhealthy(metav1.ConditionFalse, 2*time.Second)), cluster("b")},
			targets:     []string{"a", "b"},
			tolerations: []corev1.Toleration{notReadyFor(2)},
			want:        FailoverDecision{Evict: []string{"a"}},
		},
		{
			name:     "no toleration: the default one",
			clusters: []Cluster{cluster("a", unhealthy(metav1.ConditionFalse, time.Minute)), cluster("b", unhealthy(metav1.ConditionUnknown, 301*time.Second))},
			targets:  []string{"a", "b"},
			want:     FailoverDecision{Evict: []string{"b"}, RecheckAfter: 4 * time.Minute},
		},
		{
			name:     "unknown is unreachable, which a not-ready toleration does not cover",
			clusters: []Cluster{cluster("a", unhealthy(metav1.ConditionUnknown, 10*time.Second))},
			targets:  []string{"a"},
			tolerations: []corev1.Toleration{notReadyFor(2),
				{Key: UnreachableTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(20)}},
			want: FailoverDecision{RecheckAfter: 10 * time.Second},
		},
		{
			name:     "unreachable, no toleration: the default one, from when the taint was added",
			clusters: []Cluster{cluster("a", unreachable(time.Second))},
			targets:  []string{"a"},
			want:     FailoverDecision{RecheckAfter: 299 * time.Second},
		},
		{
			name:        "unreachable, tolerated longer than the default: that long, not-ready does not stand too",
			clusters:    []Cluster{cluster("a", unreachable(time.Second))},
			targets:     []string{"a"},
			tolerations: []corev1.Toleration{unreachableFor(600)},
			want:        FailoverDecision{RecheckAfter: 599 * time.Second},
		},
		{
			name:        "unreachable past its toleration: evicted, whatever not-ready's",
			clusters:    []Cluster{cluster("a", unreachable(11*time.Second))},
			targets:     []string{"a"},
			tolerations: []corev1.Toleration{notReadyFor(600), unreachableFor(10)},
			want:        FailoverDecision{Evict: []string{"a"}},
		},
		{
			name: "a readiness taint without timeAdded: the Ready condition counts",
			clusters: []Cluster{cluster("a", unhealthy(metav1.ConditionFalse, time.Minute),
				taint(corev1.Taint{Key: UnreachableTaintKey, Effect: corev1.TaintEffectNoExecute}))},
			targets: []string{"a"},
			want:    FailoverDecision{RecheckAfter: 4 * time.Minute},
		},
		{
			name:        "a toleration without seconds tolerates forever",
			clusters:    []Cluster{cluster("a", unhealthy(metav1.ConditionFalse, time.Hour))},
			targets:     []string{"a"},
			tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		},
		{
			name:     "an untolerated NoExecute taint of the cluster's own evicts at once",
			clusters: []Cluster{cluster("a", taint(corev1.Taint{Key: "drain", Effect: corev1.TaintEffectNoExecute}))},
			targets:  []string{"a"},
			want:     FailoverDecision{Evict: []string{"a"}},
		},
		{
			// As a drain written with kubectl: the Cluster controller stamps it, and the binding is looked at again
			// then; until it does, the taint counts as added now, never as tolerated forever.
			name:        "a NoExecute taint not stamped yet counts from now",
			clusters:    []Cluster{cluster("a", taint(corev1.Taint{Key: "drain", Effect: corev1.TaintEffectNoExecute}))},
			targets:     []string{"a"},
			tolerations: []corev1.Toleration{drainFor(60)},
			want:        FailoverDecision{RecheckAfter: time.Minute},
		},
		{
			name:        "a drain tolerated for a while: evicted once it ran out",
			clusters:    []Cluster{cluster("a", drainedAgo(61*time.Second)), cluster("b", drainedAgo(59*time.Second))},
			targets:     []string{"a", "b"},
			tolerations: []corev1.Toleration{drainFor(60)},
			want:        FailoverDecision{Evict: []string{"a"}, RecheckAfter: time.Second},
		},
		{
			name:     "the first toleration that matches counts, not the longest",
			clusters: []Cluster{cluster("a", unhealthy(metav1.ConditionFalse, 2*time.Minute))},
			targets:  []string{"a"},
			tolerations: []corev1.Toleration{notReadyFor(60),
				{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(300)}},
			want: FailoverDecision{Evict: []string{"a"}},
		},
		{
			name:     "the first toleration that matches counts, not the shortest",
			clusters: []Cluster{cluster("a", unhealthy(metav1.ConditionFalse, 2*time.Minute))},
			targets:  []string{"a"},
			tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(300)},
				notReadyFor(60)},
			want: FailoverDecision{RecheckAfter: 3 * time.Minute},
		},
		{
			name:     "clusters the binding is not on do not matter",
			clusters: []Cluster{cluster("a", unhealthy(metav1.ConditionFalse, time.Hour)), cluster("b")},
			targets:  []string{"b"},
		},
		{
			name:     "no Ready condition yet: nothing to count from",
			clusters: []Cluster{cluster("a", func(c *Cluster) { c.Ready = "" })},
			targets:  []string{"a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tc []any
			for _, name := range tt.targets {
				tc = append(tc, name, 1)
			}
			in := FailoverInput{Clusters: tt.clusters, Targets: targets(tc...), Tolerations: tt.tolerations, Now: now,
				Failover: &policyv1alpha1.FailoverBehavior{}}
			if tt.off {
				in.Failover = nil
			}
			got := Failover(in)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
