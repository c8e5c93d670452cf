package scheduling

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/scheduler"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// testClusterStatePreservation: a workload on one cluster of two records the state its cluster failover's
// statePreservation picks from its status there; when that cluster fails, and reports nothing any more, the
// workload moves to the other with that state on its task, for the new copy's labels.
func testClusterStatePreservation(t *testing.T, c client.Client) {
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ledger"}}); err != nil {
		t.Fatal(err)
	}
	zero := int64(0)
	rb := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ledger", Name: "stream-deployment"},
		Spec: workv1alpha1.ResourceBindingSpec{
			Resource: workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ledger", Name: "stream"},
			Replicas: 1,
			Failover: &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{
				PurgeMode: policyv1alpha1.PurgeModeDirectly,
				StatePreservation: &policyv1alpha1.StatePreservation{Rules: []policyv1alpha1.StatePreservationRule{
					{AliasLabelName: "example.io/job", JSONPath: "{ .job }"}}},
			}},
			Placement: &policyv1alpha1.Placement{
				ClusterAffinity:   &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1", "member2"}},
				SpreadConstraints: []policyv1alpha1.SpreadConstraint{{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MinGroups: 1, MaxGroups: 1}},
				ClusterTolerations: []corev1.Toleration{{Key: scheduler.NotReadyTaintKey, Operator: corev1.TolerationOpExists,
					Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &zero}},
			},
		},
	}
	if err := c.Create(ctx, rb); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(rb)
	from, to := onOneOfTwo(t, c, rb)
	t.Cleanup(func() {
		setReady(t, c, from, metav1.ConditionTrue)
		_ = c.Delete(ctx, rb)
	})
	report := func(status string) {
		t.Helper()
		writeAggregatedStatus(t, c, key, func(*workv1alpha1.ResourceBinding) []workv1alpha1.AggregatedStatusItem {
			item := workv1alpha1.AggregatedStatusItem{ClusterName: from, Applied: true, Health: workv1alpha1.ResourceUnknown}
			if status != "" {
				item.Status, item.Health = &runtime.RawExtension{Raw: []byte(status)}, workv1alpha1.ResourceHealthy
			}
			return []workv1alpha1.AggregatedStatusItem{item}
		})
	}
	report(`{"job":"j9"}`)
	want := fmt.Sprintf(`{%q:{"example.io/job":"j9"}}`, from)
	fedtest.Eventually(t, 20*time.Second, "the state recorded", func() error {
		if err := c.Get(ctx, key, rb); err != nil {
			return err
		}
		if got := rb.Annotations[names.PreservedStateAnnotation]; got != want {
			return fmt.Errorf("annotation %q, want %q", got, want)
		}
		return nil
	})

	// The cluster fails: its status is no longer kept, and the workload leaves it with the state recorded.
	report("")
	setReady(t, c, from, metav1.ConditionFalse)
	fedtest.Eventually(t, 20*time.Second, "moved", scheduledTo(c, key, []workv1alpha1.TargetCluster{{Name: to, Replicas: 1}}))
	if err := c.Get(ctx, key, rb); err != nil {
		t.Fatal(err)
	}
	state := map[string]string{"example.io/job": "j9"}
	if tasks := rb.Spec.GracefulEvictionTasks; len(tasks) != 1 || tasks[0].FromCluster != from ||
		tasks[0].PurgeMode != policyv1alpha1.PurgeModeDirectly || !reflect.DeepEqual(tasks[0].PreservedLabelState, state) {
		t.Errorf("tasks %+v, want one of %s, Directly, with the job's state", tasks, from)
	}
	if got := scheduler.PreservedLabels(&rb.Spec, to); !reflect.DeepEqual(got, state) {
		t.Errorf("labels for %s's copy: %v", to, got)
	}
}
