package scheduling

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/applystatus"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/scheduler"
	"github.com/fedmesh/fedmesh/test/cluster"
	"github.com/fedmesh/fedmesh/test/fedtest"
	"github.com/fedmesh/fedmesh/test/promtest"
)

// startHost starts a host API server with fedmesh's CRDs, two Ready Clusters (member1, member2) and the
// scheduling controller; the members themselves are not needed, only their Cluster objects.
func startHost(t *testing.T) (client.Client, *cluster.Cluster) {
	t.Helper()
	ctx := context.Background()
	host, c := fedtest.Host(t)
	fedtest.StartManager(t, host.Config(), func(mgr ctrl.Manager) error {
		r := &Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: fedtest.Recorder(t, mgr, "fedmesh-scheduler")}
		return r.SetupWithManager(mgr)
	})
	for _, name := range []string{"member1", "member2"} {
		mc := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull}}
		if err := c.Create(ctx, mc); err != nil {
			t.Fatal(err)
		}
		setReady(t, c, name, metav1.ConditionTrue)
	}
	return c, host
}

// setReady writes the Cluster's Ready condition, as the cluster controller would.
func setReady(t *testing.T, c client.Client, name string, status metav1.ConditionStatus) {
	t.Helper()
	var mc clusterv1alpha1.Cluster
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &mc); err != nil {
		t.Fatal(err)
	}
	meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: clusterv1alpha1.ClusterConditionReady, Status: status, Reason: "Test"})
	if err := c.Status().Update(context.Background(), &mc); err != nil {
		t.Fatal(err)
	}
}

func scheduledTo(c client.Client, key client.ObjectKey, want []workv1alpha1.TargetCluster) func() error {
	return func() error {
		var rb workv1alpha1.ResourceBinding
		if err := c.Get(context.Background(), key, &rb); err != nil {
			return err
		}
		if diff := cmp.Diff(want, rb.Spec.Clusters); diff != "" {
			return fmt.Errorf("clusters (-want +got):\n%s", diff)
		}
		cond := meta.FindStatusCondition(rb.Status.Conditions, workv1alpha1.ConditionScheduled)
		if cond == nil || cond.Status != metav1.ConditionTrue || rb.Status.SchedulerObservedGeneration != rb.Generation || rb.Status.LastScheduledTime == nil {
			return fmt.Errorf("status not scheduled for generation %d: %+v", rb.Generation, rb.Status)
		}
		return nil
	}
}

// onOneOfTwo waits until rb is scheduled to one of member1 and member2, and returns that one and the other.
func onOneOfTwo(t *testing.T, c client.Client, rb *workv1alpha1.ResourceBinding) (on, other string) {
	t.Helper()
	key := client.ObjectKeyFromObject(rb)
	fedtest.Eventually(t, 20*time.Second, "on one cluster", func() error {
		if err := c.Get(context.Background(), key, rb); err != nil {
			return err
		}
		if len(rb.Spec.Clusters) != 1 {
			return fmt.Errorf("clusters %v", rb.Spec.Clusters)
		}
		on, other = rb.Spec.Clusters[0].Name, "member1"
		if on == "member1" {
			other = "member2"
		}
		return nil
	})
	return on, other
}

// writeAggregatedStatus sets the aggregated status of the binding key names to what items makes of it, as the
// status stage would.
func writeAggregatedStatus(t *testing.T, c client.Client, key client.ObjectKey, items func(*workv1alpha1.ResourceBinding) []workv1alpha1.AggregatedStatusItem) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var rb workv1alpha1.ResourceBinding
		if err := c.Get(context.Background(), key, &rb); err != nil {
			return err
		}
		rb.Status.AggregatedStatus = items(&rb)
		return c.Status().Update(context.Background(), &rb)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestScheduling runs the controller against one host API server; the subtests run in order.
func TestScheduling(t *testing.T) {
	c, host := startHost(t)
	t.Run("each placed and stated once", func(t *testing.T) { testWrittenOnce(t, c, host) })
	t.Run("other stages' status not looked at", func(t *testing.T) { testOthersStatus(t, c) })
	t.Run("divided, scaled, failed over", func(t *testing.T) { testDivided(t, c) })
	t.Run("application failover", func(t *testing.T) { testApplicationFailover(t, c) })
	t.Run("cluster failover carries the state recorded", func(t *testing.T) { testClusterStatePreservation(t, c) })
	t.Run("unschedulable, then placed", func(t *testing.T) { testUnschedulable(t, c) })
	t.Run("no room, then room", func(t *testing.T) { testRoomFreed(t, c) })
	t.Run("not ready: keeps its replicas, takes no new ones", func(t *testing.T) { testNotReadyKeepsNoMore(t, c) })
	t.Run("higher schedule priority first", func(t *testing.T) { testSchedulePriority(t, c, host) })
}

func testDivided(t *testing.T, c client.Client) {
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}); err != nil {
		t.Fatal(err)
	}
	twoSeconds := int64(2)
	rb := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web-deployment"},
		Spec: workv1alpha1.ResourceBindingSpec{
			Resource: workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "apps", Name: "web"},
			Replicas: 6,
			Failover: &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{}},
			Placement: &policyv1alpha1.Placement{
				ClusterTolerations: []corev1.Toleration{{Key: scheduler.NotReadyTaintKey, Operator: corev1.TolerationOpExists,
					Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &twoSeconds}},
				ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
					ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
					ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
					WeightPreference: &policyv1alpha1.ClusterPreferences{StaticWeightList: []policyv1alpha1.StaticClusterWeight{
						{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1"}}, Weight: 2},
						{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member2"}}, Weight: 1},
					}},
				},
			},
		},
	}
	if err := c.Create(ctx, rb); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(rb)
	fedtest.Eventually(t, 20*time.Second, "2:1 of 6", scheduledTo(c, key, []workv1alpha1.TargetCluster{{Name: "member1", Replicas: 4}, {Name: "member2", Replicas: 2}}))

	// Stable: a Cluster change that changes nothing for the binding writes nothing.
	if err := c.Get(ctx, key, rb); err != nil {
		t.Fatal(err)
	}
	version := rb.ResourceVersion
	var m2 clusterv1alpha1.Cluster
	if err := c.Get(ctx, client.ObjectKey{Name: "member2"}, &m2); err != nil {
		t.Fatal(err)
	}
	m2.Labels = map[string]string{"touched": "yes"}
	if err := c.Update(ctx, &m2); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if err := c.Get(ctx, key, rb); err != nil {
		t.Fatal(err)
	}
	if rb.ResourceVersion != version {
		t.Errorf("binding written though nothing changed: %+v", rb)
	}

	rb.Spec.Replicas = 9
	if err := c.Update(ctx, rb); err != nil {
		t.Fatal(err)
	}
	fedtest.Eventually(t, 20*time.Second, "2:1 of 9", scheduledTo(c, key, []workv1alpha1.TargetCluster{{Name: "member1", Replicas: 6}, {Name: "member2", Replicas: 3}}))

	// member1 fails; its replicas stay through the 2 s toleration, then move to member2.
	setReady(t, c, "member1", metav1.ConditionFalse)
	var m1 clusterv1alpha1.Cluster
	if err := c.Get(ctx, client.ObjectKey{Name: "member1"}, &m1); err != nil {
		t.Fatal(err)
	}
	failed := meta.FindStatusCondition(m1.Status.Conditions, clusterv1alpha1.ClusterConditionReady).LastTransitionTime.Time
	time.Sleep(time.Until(failed.Add(time.Second)))
	if err := scheduledTo(c, key, []workv1alpha1.TargetCluster{{Name: "member1", Replicas: 6}, {Name: "member2", Replicas: 3}})(); err != nil {
		t.Errorf("within the toleration: %v", err)
	}
	fedtest.Eventually(t, 20*time.Second, "failover", scheduledTo(c, key, []workv1alpha1.TargetCluster{{Name: "member2", Replicas: 9}}))
	fedtest.Eventually(t, 20*time.Second, "failover event", func() error {
		var events corev1.EventList
		if err := c.List(ctx, &events, client.InNamespace("apps")); err != nil {
			return err
		}
		if !slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
			return e.Reason == ReasonEvicted && e.InvolvedObject.Name == rb.Name
		}) {
			return fmt.Errorf("no %s event among %d", ReasonEvicted, len(events.Items))
		}
		return nil
	})

	// member1 recovers: the replicas stay where failover put them (the placement did not change), until the
	// next change of replicas divides them by the weights again.
	setReady(t, c, "member1", metav1.ConditionTrue)
	time.Sleep(time.Second)
	if err := scheduledTo(c, key, []workv1alpha1.TargetCluster{{Name: "member2", Replicas: 9}})(); err != nil {
		t.Errorf("after member1 recovered: %v", err)
	}
	if err := c.Get(ctx, key, rb); err != nil {
		t.Fatal(err)
	}
	if got := rb.Annotations[names.ScheduledPlacementAnnotation]; got != placementText(rb.Spec.Placement) {
		t.Errorf("scheduled placement recorded as %q", got)
	}
	rb.Spec.Replicas = 12
	if err := c.Update(ctx, rb); err != nil {
		t.Fatal(err)
	}
	fedtest.Eventually(t, 20*time.Second, "2:1 of 12", scheduledTo(c, key, []workv1alpha1.TargetCluster{{Name: "member1", Replicas: 8}, {Name: "member2", Replicas: 4}}))
}

func testUnschedulable(t *testing.T, c client.Client) {
	ctx := context.Background()
	// The binding of a cluster-scoped template, in the system namespace.
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: names.SystemNamespace}}); err != nil {
		t.Fatal(err)
	}
	rb := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: names.SystemNamespace, Name: "admin-clusterrole"},
		Spec: workv1alpha1.ResourceBindingSpec{
			Resource:  workv1alpha1.ObjectReference{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "admin"},
			Placement: &policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member3"}}},
		},
	}
	if err := c.Create(ctx, rb); err != nil {
		t.Fatal(err)
	}
	fedtest.Eventually(t, 20*time.Second, "Scheduled False", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(rb), rb); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(rb.Status.Conditions, workv1alpha1.ConditionScheduled)
		want := "no cluster fits (member1: not in clusterNames, member2: not in clusterNames)"
		if cond == nil || cond.Status != metav1.ConditionFalse || cond.Message != want {
			return fmt.Errorf("condition %+v, want False with %q", cond, want)
		}
		return nil
	})
	fedtest.Eventually(t, 20*time.Second, "warning event", func() error {
		var events corev1.EventList
		if err := c.List(ctx, &events); err != nil {
			return err
		}
		if !slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
			return e.Reason == ReasonUnschedulable && e.Type == corev1.EventTypeWarning && e.InvolvedObject.Name == rb.Name
		}) {
			return fmt.Errorf("no %s event", ReasonUnschedulable)
		}
		return nil
	})

	// The cluster turns up: the binding is placed on it (Duplicated, no replicas).
	if err := c.Create(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member3"}, Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull}}); err != nil {
		t.Fatal(err)
	}
	setReady(t, c, "member3", metav1.ConditionTrue)
	fedtest.Eventually(t, 20*time.Second, "placed on member3", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(rb), rb); err != nil {
			return err
		}
		if want := []workv1alpha1.TargetCluster{{Name: "member3"}}; !slices.Equal(rb.Spec.Clusters, want) {
			return fmt.Errorf("clusters %v, want %v", rb.Spec.Clusters, want)
		}
		if !meta.IsStatusConditionTrue(rb.Status.Conditions, workv1alpha1.ConditionScheduled) {
			return fmt.Errorf("not Scheduled: %+v", rb.Status.Conditions)
		}
		return nil
	})
}

// testRoomFreed: a binding that does not fit waits; the cluster's free resources growing (a status change that
// touches nothing else placement reads) is what places it.
func testRoomFreed(t *testing.T, c client.Client) {
	ctx := context.Background()
	if err := c.Create(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member4"}, Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull}}); err != nil {
		t.Fatal(err)
	}
	setReady(t, c, "member4", metav1.ConditionTrue)
	setPodRoom(t, c, "member4", "2")
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "batch"}}); err != nil {
		t.Fatal(err)
	}
	rb := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "batch", Name: "worker-deployment"},
		Spec: workv1alpha1.ResourceBindingSpec{
			Resource: workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "batch", Name: "worker"},
			Replicas: 3,
			Placement: &policyv1alpha1.Placement{
				ClusterAffinity:   &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member4"}},
				ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDuplicated},
			},
		},
	}
	if err := c.Create(ctx, rb); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(rb)
	fedtest.Eventually(t, 20*time.Second, "Scheduled False for room", func() error {
		if err := c.Get(ctx, key, rb); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(rb.Status.Conditions, workv1alpha1.ConditionScheduled)
		if cond == nil || cond.Status != metav1.ConditionFalse || !strings.Contains(cond.Message, "room for 2 of 3 replicas") {
			return fmt.Errorf("condition %+v, want False for room", cond)
		}
		return nil
	})
	setPodRoom(t, c, "member4", "10")
	fedtest.Eventually(t, 20*time.Second, "placed once there is room", scheduledTo(c, key, []workv1alpha1.TargetCluster{{Name: "member4", Replicas: 3}}))
}

// setPodRoom reports, as the cluster controller would, that the Cluster has room for pods more pods.
func setPodRoom(t *testing.T, c client.Client, name, pods string) {
	t.Helper()
	var mc clusterv1alpha1.Cluster
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &mc); err != nil {
		t.Fatal(err)
	}
	mc.Status.ResourceSummary = &clusterv1alpha1.ResourceSummary{Allocatable: corev1.ResourceList{corev1.ResourcePods: resource.MustParse(pods)}}
	if err := c.Status().Update(context.Background(), &mc); err != nil {
		t.Fatal(err)
	}
}

// testOthersStatus writes, as the binding stage would, a condition to the status of each binding testWrittenOnce
// placed: the scheduler does not look at any of them again.
func testOthersStatus(t *testing.T, c client.Client) {
	ctx := context.Background()
	var list workv1alpha1.ResourceBindingList
	if err := c.List(ctx, &list, client.InNamespace("burst")); err != nil || len(list.Items) == 0 {
		t.Fatalf("%d bindings to write to: %v", len(list.Items), err)
	}
	before := promtest.Reconciles(t, "scheduler-resourcebinding")
	for i := range list.Items {
		rb := &list.Items[i]
		cond := metav1.Condition{Type: workv1alpha1.ConditionFullyApplied, Status: metav1.ConditionTrue, Reason: "FullyApplied", Message: "applied", ObservedGeneration: rb.Generation, LastTransitionTime: metav1.Now()}
		if err := applystatus.Apply(ctx, c, rb, names.StatusFieldManager, &workv1alpha1.ResourceBindingStatus{Conditions: []metav1.Condition{cond}}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2 * time.Second) // for the scheduler to have been handed the updates
	if after := promtest.Reconciles(t, "scheduler-resourcebinding"); after != before {
		t.Errorf("the scheduler reconciled %v times after %d status writes of another stage, want none", after-before, len(list.Items))
	}
}

// testWrittenOnce creates bindings in a burst and counts the host's requests: each is placed with one patch and
// its status written once. (The case of a cache that lags the status write by more than the next pass takes to
// start is seen under load only, in the federation-throughput benchmark's requests per template.)
func testWrittenOnce(t *testing.T, c client.Client, host *cluster.Cluster) {
	ctx := context.Background()
	const bindings = 40
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "burst"}}); err != nil {
		t.Fatal(err)
	}
	before, err := cluster.Requests(ctx, host.Clientset())
	if err != nil {
		t.Fatal(err)
	}
	for i := range bindings {
		rb := &workv1alpha1.ResourceBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "burst", Name: fmt.Sprintf("app-%d-deployment", i)},
			Spec: workv1alpha1.ResourceBindingSpec{
				Resource: workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "burst", Name: fmt.Sprintf("app-%d", i)},
			},
		}
		if err := c.Create(ctx, rb); err != nil {
			t.Fatal(err)
		}
	}
	fedtest.Eventually(t, 20*time.Second, "all placed", func() error {
		var list workv1alpha1.ResourceBindingList
		if err := c.List(ctx, &list, client.InNamespace("burst")); err != nil {
			return err
		}
		for _, rb := range list.Items {
			if err := scheduledTo(c, client.ObjectKeyFromObject(&rb), []workv1alpha1.TargetCluster{{Name: "member1"}, {Name: "member2"}})(); err != nil {
				return fmt.Errorf("%s: %w", rb.Name, err)
			}
		}
		return nil
	})
	time.Sleep(2 * time.Second) // for any second pass, and for the last requests to be counted
	after, err := cluster.Requests(ctx, host.Clientset())
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range []string{"PATCH resourcebindings", "APPLY resourcebindings/status"} {
		if n := after[req] - before[req]; n != bindings {
			t.Errorf("%s: %v requests for %d bindings, want one each", req, n, bindings)
		}
	}
}
