package sharding

import (
	"encoding/json"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/shard"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// A promotion sets the stable StatefulSet to OnDelete to roll it itself. Once the roll is over, done or stopped by
// removing spec.canary or its promotion, the StatefulSet has its own updateStrategy back (the one it had last before
// the manager set OnDelete), else the next change of its template (an upgrade of the operator) replaces no pod.
// A strategy someone else set after the manager's last write stays.
func TestPromotionGivesBackTheUpdateStrategy(t *testing.T) {
	_, c := fedtest.Host(t)
	ctx := t.Context()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ops"}}); err != nil {
		t.Fatal(err)
	}
	rolling := func(partition int32) appsv1.StatefulSetUpdateStrategy {
		return appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To(partition)}}
	}
	onDelete := appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
	for _, tc := range []struct {
		name string
		// userStrategy, if set, is what the user sets mid-roll, after the first step.
		userStrategy *appsv1.StatefulSetUpdateStrategy
		// stop ends the roll before it is done and returns the status left; nil rolls to the end.
		stop func(t *testing.T, r *Reconciler, sc *meshv1alpha1.ShardingConfig, pods shardPods) *meshv1alpha1.CanaryStatus
		want appsv1.StatefulSetUpdateStrategy
	}{
		{name: "done", want: rolling(1)},
		{name: "done-after-the-user-changed-it", userStrategy: ptr.To(rolling(0)), want: rolling(0)},
		{name: "canary-removed", want: rolling(1), stop: func(t *testing.T, r *Reconciler, sc *meshv1alpha1.ShardingConfig, pods shardPods) *meshv1alpha1.CanaryStatus {
			sc.Spec.Canary = nil
			stable := shard.Assignment{0: shard.Split(2)[0], 1: shard.Split(2)[1]}
			return r.rollout(ctx, sc, Published{Epoch: 5, Assignment: stable}, true, stable, pods, nil).status
		}},
		{name: "promotion-removed", want: rolling(1), stop: func(t *testing.T, r *Reconciler, sc *meshv1alpha1.ShardingConfig, pods shardPods) *meshv1alpha1.CanaryStatus {
			sc.Spec.Canary.Promotion = nil
			stable := shard.Assignment{0: shard.Split(2)[0], 1: shard.Split(2)[1]}
			pub := Published{Epoch: 5, Assignment: shard.Reassign(stable, shard.Full(), canaryShardOf(sc))}
			sc.Status.Canary.Ranges = shard.StatusRanges(shard.Full())
			return r.rollout(ctx, sc, pub, true, stable, pods, nil).status
		}},
		{name: "canary-removed-after-the-user-changed-it", want: rolling(3), stop: func(t *testing.T, r *Reconciler, sc *meshv1alpha1.ShardingConfig, pods shardPods) *meshv1alpha1.CanaryStatus {
			setStrategy(t, c, sc.Spec.Canary.Promotion.StatefulSet, rolling(3))
			sc.Spec.Canary = nil
			stable := shard.Assignment{0: shard.Split(2)[0], 1: shard.Split(2)[1]}
			return r.rollout(ctx, sc, Published{Epoch: 5, Assignment: stable}, true, stable, pods, nil).status
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: tc.name},
				Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2), UpdateStrategy: rolling(1),
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": tc.name}},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": tc.name}},
						Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "op", Image: "operator:v1"}}}}}}
			if err := c.Create(ctx, sts); err != nil {
				t.Fatal(err)
			}
			r := statusReconciler(c)
			sc := testConfig(2)
			sc.Spec.Canary = &meshv1alpha1.Canary{Namespaces: []string{"shop"}, Action: meshv1alpha1.CanaryPromote,
				Selector:  metav1.LabelSelector{MatchLabels: map[string]string{"track": "canary"}},
				Promotion: &meshv1alpha1.CanaryPromotion{StatefulSet: tc.name, Container: "op", Image: "operator:v2"}}
			pods := func(image string) shardPods {
				out := shardPods{stableShards: map[int]bool{0: true, 1: true}}
				for _, index := range []string{"0", "1"} {
					name := tc.name + "-" + index
					out.stable = append(out.stable, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: name,
						UID: ktypes.UID(name + "-" + image), Labels: map[string]string{ordinal: index, "app": tc.name},
						OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(sts, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}},
						Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "op", Image: image}}},
						Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}})
				}
				return out
			}

			st, _, err := r.rollStable(ctx, sc, nil, pods("operator:v1"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := getStatefulSet(t, c, tc.name); !apiequality.Semantic.DeepEqual(got.Spec.UpdateStrategy, onDelete) {
				t.Fatalf("rolling: updateStrategy %+v, want OnDelete", got.Spec.UpdateStrategy)
			}
			if tc.userStrategy != nil {
				setStrategy(t, c, tc.name, *tc.userStrategy)
			}
			if tc.stop != nil {
				st, _, err = r.rollStable(ctx, sc, st, pods("operator:v1"), nil)
				if err != nil || st.Done {
					t.Fatalf("second step: %+v, %v; want a roll under way", st, err)
				}
				sc.Status.Canary = &meshv1alpha1.CanaryStatus{Phase: meshv1alpha1.CanaryPromoted, CurrentStep: -1, Promotion: st}
				if left := tc.stop(t, r, sc, pods("operator:v1")); left != nil && left.Promotion != nil {
					t.Errorf("the stopped roll is still recorded: %+v", left.Promotion)
				}
			} else {
				for i := 0; i < 4 && !st.Done; i++ {
					if st, _, err = r.rollStable(ctx, sc, st, pods("operator:v2"), nil); err != nil {
						t.Fatal(err)
					}
				}
				if !st.Done {
					t.Fatalf("roll not done: %+v", st)
				}
			}
			got := getStatefulSet(t, c, tc.name)
			if !apiequality.Semantic.DeepEqual(got.Spec.UpdateStrategy, tc.want) {
				t.Errorf("roll over, updateStrategy %s, want %s: the next image change in the template rolls no pod, or not as the user said",
					describeStrategy(got.Spec.UpdateStrategy), describeStrategy(tc.want))
			}
			if a, ok := got.Annotations[savedStrategyAnnotation]; ok {
				t.Errorf("annotation %s left: %s", savedStrategyAnnotation, a)
			}
			if tc.stop == nil {
				// Done and restored: a later reconcile changes nothing.
				again, _, err := r.rollStable(ctx, sc, st, pods("operator:v2"), nil)
				if err != nil || !again.Done || getStatefulSet(t, c, tc.name).ResourceVersion != got.ResourceVersion {
					t.Errorf("after the roll: %+v, %v, StatefulSet written again", again, err)
				}
			}
		})
	}
}

func getStatefulSet(t *testing.T, c client.Client, name string) *appsv1.StatefulSet {
	t.Helper()
	var sts appsv1.StatefulSet
	if err := c.Get(t.Context(), ktypes.NamespacedName{Namespace: "ops", Name: name}, &sts); err != nil {
		t.Fatal(err)
	}
	return &sts
}

func setStrategy(t *testing.T, c client.Client, name string, strategy appsv1.StatefulSetUpdateStrategy) {
	t.Helper()
	sts := getStatefulSet(t, c, name)
	sts.Spec.UpdateStrategy = strategy
	if err := c.Update(t.Context(), sts); err != nil {
		t.Fatal(err)
	}
}

func describeStrategy(s appsv1.StatefulSetUpdateStrategy) string {
	b, _ := json.Marshal(s)
	return string(b)
}
