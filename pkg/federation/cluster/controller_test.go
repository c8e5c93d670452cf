package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/member"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// TestClusterHealthFollowsTheMembersAPIServer runs the controller against a real host and member: the member
// becomes Ready with its nodes summed up, is tainted when its API server goes away, and recovers when it is back.
func TestClusterHealthFollowsTheMembersAPIServer(t *testing.T) {
	f := fedtest.Start(t, fedtest.Options{Members: 1, Workloads: true})
	t.Logf("%s federation started", time.Now().Format("15:04:05.000"))
	m := f.Members[0]
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	// A pod asking for 100m cpu: the summary counts it as allocated once scheduled onto a fake node.
	workload := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "sized"},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{Name: "app", Image: "app", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: *resourceQuantity("100m")},
			}}},
		},
	}
	if _, err := m.Clientset().CoreV1().Pods("default").Create(ctx, workload, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	interval := 500 * time.Millisecond
	fedtest.StartManager(t, f.Federation.Host.Config(), func(mgr ctrl.Manager) error {
		r := &Reconciler{
			Client:   mgr.GetClient(),
			Members:  &member.Factory{Host: mgr.GetAPIReader()},
			Recorder: fedtest.Recorder(t, mgr, "fedmesh-cluster-test"),
			Options:  Options{ProbeInterval: interval, ProbeTimeout: 2 * time.Second, FailureThreshold: 2},
		}
		return r.SetupWithManager(mgr)
	})

	// Ready, with the two fake nodes (32 cpu each) summed up.
	c := waitFor(t, f.Host, m.Name(), 30*time.Second, "Ready with a node summary", func(c *clusterv1alpha1.Cluster) error {
		if !IsReady(c) {
			return fmt.Errorf("not ready: %v", c.Status.Conditions)
		}
		if c.Status.NodeSummary == nil || c.Status.NodeSummary.TotalNum != 2 || c.Status.NodeSummary.ReadyNum != 2 {
			return fmt.Errorf("node summary %+v", c.Status.NodeSummary)
		}
		if s := c.Status.ResourceSummary; s == nil || s.Allocated.Cpu().Cmp(*resourceQuantity("100m")) != 0 || s.Allocated.Pods().Value() != 1 {
			return fmt.Errorf("resource summary %+v, want the pod allocated", s)
		}
		return nil
	})
	if cpu := c.Status.ResourceSummary.Allocatable[corev1.ResourceCPU]; cpu.Cmp(resource64) != 0 {
		t.Errorf("allocatable cpu %s, want 64", cpu.String())
	}
	if c.Status.KubernetesVersion == "" || !servesDeployments(c) {
		t.Errorf("version %q, apiEnablements %d group versions: want a version and apps/v1 deployments", c.Status.KubernetesVersion, len(c.Status.APIEnablements))
	}
	if len(c.Spec.Taints) != 0 {
		t.Errorf("ready cluster has taints %v", c.Spec.Taints)
	}
	if g := gaugeValue(t, m.Name()); g != 1 {
		t.Errorf("ready gauge %v, want 1", g)
	}
	// Probes that find nothing new write nothing.
	time.Sleep(2 * interval)
	var before, after clusterv1alpha1.Cluster
	if err := f.Host.Get(ctx, client.ObjectKey{Name: m.Name()}, &before); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * interval)
	if err := f.Host.Get(ctx, client.ObjectKey{Name: m.Name()}, &after); err != nil {
		t.Fatal(err)
	}
	if before.ResourceVersion != after.ResourceVersion {
		t.Errorf("the Cluster was written while nothing changed: %+v\nthen %+v", before.Status, after.Status)
	}
	// The summary follows the member's pods as they change (from its watch, not a list per probe).
	if err := m.Clientset().CoreV1().Pods("default").Delete(ctx, "sized", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	c = waitFor(t, f.Host, m.Name(), 20*time.Second, "nothing allocated once the pod is gone", func(c *clusterv1alpha1.Cluster) error {
		if s := c.Status.ResourceSummary; s == nil || !s.Allocated.Cpu().IsZero() || s.Allocated.Pods().Value() != 0 {
			return fmt.Errorf("resource summary %+v", s)
		}
		return nil
	})
	readySince := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady).LastTransitionTime

	// The member's API server goes away: NotReachable, both taints.
	m.StopAPIServer()
	t.Logf("%s API server stopped", time.Now().Format("15:04:05.000"))
	c = waitFor(t, f.Host, m.Name(), 20*time.Second, "unreachable and tainted", func(c *clusterv1alpha1.Cluster) error {
		cond := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
		if cond.Status != metav1.ConditionFalse || cond.Reason != ReasonNotReachable {
			return fmt.Errorf("ready condition %s/%s", cond.Status, cond.Reason)
		}
		if !hasTaint(c, TaintNotReady, corev1.TaintEffectNoSchedule) || !hasTaint(c, TaintUnreachable, corev1.TaintEffectNoExecute) {
			return fmt.Errorf("taints %v", c.Spec.Taints)
		}
		return nil
	})
	if since, ok := NotReadySince(c); !ok || since.Before(readySince.Time) {
		t.Errorf("NotReadySince %v %v, want after %v", since, ok, readySince)
	}
	if g := gaugeValue(t, m.Name()); g != 0 {
		t.Errorf("ready gauge %v, want 0", g)
	}
	if c.Status.NodeSummary == nil || c.Status.NodeSummary.TotalNum != 2 {
		t.Errorf("an unreachable cluster lost its last node summary: %+v", c.Status.NodeSummary)
	}

	waitForEvent(t, f.Host, m.Name(), ReasonNotReachable)

	// Back again: Ready, no taints.
	if err := m.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, f.Host, m.Name(), 20*time.Second, "Ready and untainted", func(c *clusterv1alpha1.Cluster) error {
		if !IsReady(c) {
			return fmt.Errorf("not ready: %v", c.Status.Conditions)
		}
		if len(c.Spec.Taints) != 0 {
			return fmt.Errorf("taints %v", c.Spec.Taints)
		}
		return nil
	})
}

// TestPersonsDrainTaintIsStampedOnEdit runs the controller against a real host: a NoExecute taint a person adds to
// a Cluster's spec.taints, as kubectl writes it, gets its timeAdded from the edit itself (not from the next probe,
// an hour away here), on a Pull cluster and a Push one alike; a later edit's own timeAdded is left as written.
func TestPersonsDrainTaintIsStampedOnEdit(t *testing.T) {
	host, c := fedtest.Host(t)
	ctx := context.Background()
	clusters := []*clusterv1alpha1.Cluster{
		{ObjectMeta: metav1.ObjectMeta{Name: "pull1"}, Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull}},
		// Its credentials are missing: probed, it fails at once, no member needed.
		{ObjectMeta: metav1.ObjectMeta{Name: "push1"}, Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push,
			APIEndpoint: "https://127.0.0.1:1", SecretRef: &clusterv1alpha1.LocalSecretReference{Namespace: "default", Name: "missing"}}},
	}
	for _, mc := range clusters {
		if err := c.Create(ctx, mc); err != nil {
			t.Fatal(err)
		}
	}
	fedtest.StartManager(t, host.Config(), func(mgr ctrl.Manager) error {
		r := &Reconciler{
			Client:   mgr.GetClient(),
			Members:  &member.Factory{Host: mgr.GetAPIReader()},
			Recorder: fedtest.Recorder(t, mgr, "fedmesh-cluster-test"),
			Options:  Options{ProbeInterval: time.Hour},
		}
		return r.SetupWithManager(mgr)
	})
	// The first probe of push1, its failure written: the edit below is all that triggers the controller.
	waitFor(t, c, "push1", 20*time.Second, "probed", func(mc *clusterv1alpha1.Cluster) error {
		if meta.FindStatusCondition(mc.Status.Conditions, clusterv1alpha1.ClusterConditionReady) == nil {
			return fmt.Errorf("no Ready condition")
		}
		return nil
	})
	time.Sleep(time.Second)

	drained := func(name string, timeAdded *metav1.Time) {
		t.Helper()
		var mc clusterv1alpha1.Cluster
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &mc); err != nil {
			t.Fatal(err)
		}
		mc.Spec.Taints = append(mc.Spec.Taints, corev1.Taint{Key: "drain", Value: "maintenance", Effect: corev1.TaintEffectNoExecute, TimeAdded: timeAdded})
		if err := c.Update(ctx, &mc); err != nil {
			t.Fatal(err)
		}
	}
	edited := metav1.NewTime(time.Now().Truncate(time.Second))
	for _, mc := range clusters {
		drained(mc.Name, nil)
	}
	for _, mc := range clusters {
		got := waitFor(t, c, mc.Name, 10*time.Second, "with its drain stamped", func(mc *clusterv1alpha1.Cluster) error {
			for _, tt := range mc.Spec.Taints {
				if tt.Key == "drain" && tt.TimeAdded != nil {
					return nil
				}
			}
			return fmt.Errorf("taints %v", mc.Spec.Taints)
		})
		for _, tt := range got.Spec.Taints {
			if tt.Key == "drain" && (tt.TimeAdded.Before(&edited) || tt.TimeAdded.After(time.Now()) || tt.Value != "maintenance") {
				t.Errorf("%s: drain taint %s added at %v, want as written, stamped after the edit at %v", mc.Name, tt.ToString(), tt.TimeAdded, edited)
			}
		}
	}

	// The person writes the taints again, with a time of their own: it stands.
	earlier := metav1.NewTime(edited.Add(-time.Hour))
	var mc clusterv1alpha1.Cluster
	if err := c.Get(ctx, client.ObjectKey{Name: "pull1"}, &mc); err != nil {
		t.Fatal(err)
	}
	mc.Spec.Taints = nil
	if err := c.Update(ctx, &mc); err != nil {
		t.Fatal(err)
	}
	drained("pull1", &earlier)
	time.Sleep(2 * time.Second)
	if err := c.Get(ctx, client.ObjectKey{Name: "pull1"}, &mc); err != nil {
		t.Fatal(err)
	}
	if len(mc.Spec.Taints) != 1 || !mc.Spec.Taints[0].TimeAdded.Equal(&earlier) {
		t.Errorf("taints %v, want the drain added at %v as written", mc.Spec.Taints, earlier)
	}
}

func waitForEvent(t *testing.T, host client.Client, cluster, reason string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		var list eventsv1.EventList
		if err := host.List(context.Background(), &list); err != nil {
			t.Fatal(err)
		}
		for _, e := range list.Items {
			if e.Regarding.Kind == "Cluster" && e.Regarding.Name == cluster && e.Reason == reason {
				return
			}
		}
	}
	t.Errorf("no %s event for cluster %s", reason, cluster)
}

var resource64 = *resourceQuantity("64")

func waitFor(t *testing.T, host client.Client, name string, timeout time.Duration, what string, ok func(*clusterv1alpha1.Cluster) error) *clusterv1alpha1.Cluster {
	t.Helper()
	var last error
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		var c clusterv1alpha1.Cluster
		if last = host.Get(context.Background(), client.ObjectKey{Name: name}, &c); last != nil {
			continue
		}
		if last = ok(&c); last == nil {
			t.Logf("%s cluster %s %s", time.Now().Format("15:04:05.000"), name, what)
			return &c
		}
	}
	t.Fatalf("cluster %s not %s within %s: %v", name, what, timeout, last)
	return nil
}

func hasTaint(c *clusterv1alpha1.Cluster, key string, effect corev1.TaintEffect) bool {
	for _, t := range c.Spec.Taints {
		if t.Key == key && t.Effect == effect {
			return effect != corev1.TaintEffectNoExecute || t.TimeAdded != nil
		}
	}
	return false
}

func servesDeployments(c *clusterv1alpha1.Cluster) bool {
	for _, e := range c.Status.APIEnablements {
		if e.GroupVersion != "apps/v1" {
			continue
		}
		for _, r := range e.Resources {
			if r.Name == "deployments" && r.Kind == "Deployment" {
				return true
			}
		}
	}
	return false
}

func gaugeValue(t *testing.T, cluster string) float64 {
	t.Helper()
	var m dto.Metric
	if err := readyGauge.WithLabelValues(cluster).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}
