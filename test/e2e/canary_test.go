package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	mcanary "github.com/fedmesh/fedmesh/pkg/manager/canary"
	"github.com/fedmesh/fedmesh/pkg/proxy"
	"github.com/fedmesh/fedmesh/pkg/shard"
	"github.com/fedmesh/fedmesh/test/cluster"
)

const canaryShard = 2 // spec.shards of the canary tests' ShardingConfig

// addCanaryPod creates pod op-canary (labels app=op-canary, image operator:v2), marks it Ready, and starts its
// proxy as shard 2, the canary shard. The pod has no IP: its fedmesh.io/proxy-metrics annotation points the
// manager at the proxy's probe address on loopback.
func (m *mesh) addCanaryPod() *proxyInstance {
	t := m.t
	t.Helper()
	cs := m.c.Clientset()
	p := &proxyInstance{addr: freeAddr(t), probes: freeAddr(t)}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "op-canary", Namespace: meshNamespace,
			Labels:      map[string]string{"app": "op-canary"},
			Annotations: map[string]string{mcanary.MetricsAnnotation: p.probes}},
		Spec: corev1.PodSpec{ServiceAccountName: "op", Containers: []corev1.Container{{Name: "op", Image: "operator:v2"}}},
	}
	m.createPod(pod)
	setPodStatus(t, cs, pod.Name, 0)
	m.runProxy(pod, canaryShard, p)
	return p
}

// setPodStatus makes the pod Running and Ready with restarts container restarts, as the admin (no kubelet here).
func setPodStatus(t *testing.T, cs kubernetes.Interface, name string, restarts int32) {
	t.Helper()
	ctx := context.Background()
	pod, err := cs.CoreV1().Pods(meshNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "op", Image: pod.Spec.Containers[0].Image, Ready: true,
		RestartCount: restarts, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}}
	if _, err := cs.CoreV1().Pods(meshNamespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// canaryConfig is a ShardingConfig of 2 stable shards and a canary: the named namespaces first, then 50% and 100%,
// each held for pause.
func canaryConfig(named []string, pause time.Duration) *meshv1alpha1.ShardingConfig {
	maxErrors, maxRestarts := int32(10), int32(0)
	return &meshv1alpha1.ShardingConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "op", Namespace: meshNamespace},
		Spec: meshv1alpha1.ShardingConfigSpec{
			Selector:  metav1.LabelSelector{MatchLabels: map[string]string{"app": "op"}},
			Shards:    2,
			Resources: []meshv1alpha1.GroupResource{{Resource: "configmaps"}},
			Canary: &meshv1alpha1.Canary{
				Selector:   metav1.LabelSelector{MatchLabels: map[string]string{"app": "op-canary"}},
				Namespaces: named,
				Steps: []meshv1alpha1.CanaryStep{
					{Percent: 50, Pause: &metav1.Duration{Duration: pause}},
					{Percent: 100, Pause: &metav1.Duration{Duration: pause}},
				},
				Analysis: &meshv1alpha1.CanaryAnalysis{MaxErrorRatePercent: &maxErrors, MaxRestarts: &maxRestarts},
				Action:   meshv1alpha1.CanaryContinue,
			},
		},
	}
}

// startCanaryMesh runs a manager, two stable shard pods and a canary pod with their proxies, and the canary
// ShardingConfig.
func startCanaryMesh(t *testing.T, c *cluster.Cluster, named []string, pause time.Duration) (*mesh, *proxyInstance) {
	t.Helper()
	m := startMesh(t, c)
	m.addShardPod(0)
	m.addShardPod(1)
	for i := range 2 {
		setPodStatus(t, c.Clientset(), fmt.Sprintf("op-%d", i), 0)
	}
	cp := m.addCanaryPod()
	if err := m.client.Create(context.Background(), canaryConfig(named, pause)); err != nil {
		t.Fatal(err)
	}
	return m, cp
}

// waitCanary waits until the canary's status satisfies cond and every proxy acknowledged the current epoch.
func (m *mesh) waitCanary(timeout time.Duration, what string, cond func(*meshv1alpha1.CanaryStatus) bool) *meshv1alpha1.ShardingConfig {
	m.t.Helper()
	var sc *meshv1alpha1.ShardingConfig
	eventually(m.t, timeout, what, func() (bool, error) {
		sc = m.shardingConfig()
		st := sc.Status.Canary
		if st == nil || !cond(st) {
			return false, fmt.Errorf("canary status %+v", st)
		}
		ready := meta.FindStatusCondition(sc.Status.Conditions, "Ready")
		return ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == sc.Generation && sc.Status.ReadyProxies == 3, nil
	})
	return sc
}

func (m *mesh) patchCanary(change func(*meshv1alpha1.Canary)) {
	m.t.Helper()
	sc := m.shardingConfig()
	orig := sc.DeepCopy()
	change(sc.Spec.Canary)
	if err := m.client.Patch(context.Background(), sc, client.MergeFrom(orig)); err != nil {
		m.t.Fatal(err)
	}
}

func hasEvent(t *testing.T, cs kubernetes.Interface, reason, noteContains string) bool {
	t.Helper()
	events, err := cs.EventsV1().Events(meshNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Reason == reason && strings.Contains(e.Note, noteContains) {
			return true
		}
	}
	return false
}

// everyNamespaceStable checks that every namespace is owned by a stable shard and the canary owns nothing.
func everyNamespaceStable(t *testing.T, sc *meshv1alpha1.ShardingConfig, namespaces []string) {
	t.Helper()
	a := statusAssignment(t, sc)
	if !a[canaryShard].Empty() {
		t.Errorf("the canary still owns %v", a[canaryShard])
	}
	if err := a.Validate(); err != nil {
		t.Errorf("final assignment: %v", err)
	}
	for _, ns := range namespaces {
		if o, ok := a.NamespaceOwner(ns); !ok || o == canaryShard {
			t.Errorf("namespace %s owned by %d (%v), want a stable shard", ns, o, ok)
		}
	}
}

// Happy path: the canary takes the named namespaces, serves them, takes 50% and then everything; promoted, and once
// the stable pods run its version, every namespace returns to the stable shards it came from.
func TestCanaryPromotes(t *testing.T) {
	t.Parallel()
	c := cluster.New(t, cluster.Options{})
	ctx := context.Background()
	namespaces := teamNamespaces(t, c.Clientset(), 20)
	named := []string{"team-03", "team-07"}
	m, cp := startCanaryMesh(t, c, named, 3*time.Second)

	// Step 1: the named namespaces are the canary's, and only they.
	sc := m.waitCanary(30*time.Second, "the named namespaces handed over", func(st *meshv1alpha1.CanaryStatus) bool {
		return st.Phase == meshv1alpha1.CanaryProgressing && st.CurrentStep == -1 && st.StepStartTime != nil
	})
	a := statusAssignment(t, sc)
	for _, ns := range namespaces {
		owner, _ := a.NamespaceOwner(ns)
		if want := (ns == named[0] || ns == named[1]); (owner == canaryShard) != want {
			t.Errorf("named step: %s owned by shard %d", ns, owner)
		}
	}
	if sc.Status.Canary.StableAssignment == nil || !sc.Status.Assignment[len(sc.Status.Assignment)-1].Canary {
		t.Errorf("status: stable assignment %v, assignment %v; want both, the canary marked", sc.Status.Canary.StableAssignment, sc.Status.Assignment)
	}
	// The canary serves them: writes and reads through its proxy succeed, and it is fenced from the others.
	canaryCS := kubernetes.NewForConfigOrDie(cp.config(m.identity))
	for _, ns := range named {
		for i := range 3 {
			name := fmt.Sprintf("canary-%d", i)
			if _, err := canaryCS.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
				t.Fatalf("canary writing its namespace %s: %v", ns, err)
			}
			if _, err := canaryCS.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
				t.Fatalf("canary reading %s/%s: %v", ns, name, err)
			}
		}
	}
	if _, err := canaryCS.CoreV1().ConfigMaps("team-00").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("canary writing team-00 in the named step: %v, want the fence", err)
	}
	stableOwner, _ := mustAssignment(t, sc.Status.Canary.StableAssignment).NamespaceOwner(named[0])
	stableCS := kubernetes.NewForConfigOrDie(m.proxies[int(stableOwner)].config(m.identity))
	if _, err := stableCS.CoreV1().ConfigMaps(named[0]).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "stable"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("stable shard %d writing %s, the canary's now: %v, want the fence", stableOwner, named[0], err)
	}
	if v := cp.metric(t, `fedmesh_proxy_requests_total{cluster="`+proxy.HostCluster+`",code="201",resource="configmaps",verb="create"}`); v == "" || v == "0" {
		t.Errorf("canary proxy's successful creates: %q", v)
	}

	// Step 2: 50% of the hash space, on top of the named namespaces.
	sc = m.waitCanary(30*time.Second, "50% handed over", func(st *meshv1alpha1.CanaryStatus) bool {
		return st.CurrentStep >= 0 && st.StepStartTime != nil
	})
	if sc.Status.Canary.CurrentStep == 0 {
		a = statusAssignment(t, sc)
		if f := a[canaryShard].Fraction(); f < 0.49 || f > 0.51 {
			t.Errorf("50%% step: the canary owns %.3f of the hash space", f)
		}
		for _, ns := range named {
			if !a[canaryShard].ContainsNamespace(ns) {
				t.Errorf("50%% step: the canary lost %s", ns)
			}
		}
	} else {
		t.Logf("the 50%% step passed before it was looked at (step %d)", sc.Status.Canary.CurrentStep)
	}

	// Step 3: 100%; then the rollout waits for Promote.
	sc = m.waitCanary(30*time.Second, "100% handed over, waiting for Promote", func(st *meshv1alpha1.CanaryStatus) bool {
		return st.CurrentStep == 1 && strings.Contains(st.Message, "waiting for action Promote")
	})
	if a := statusAssignment(t, sc); !a[canaryShard].IsFull() {
		t.Errorf("100%% step: the canary owns %v", a[canaryShard])
	}

	// Promote: the canary keeps everything until the stable pods run its images.
	m.patchCanary(func(c *meshv1alpha1.Canary) { c.Action = meshv1alpha1.CanaryPromote })
	sc = m.waitCanary(30*time.Second, "phase Promoted", func(st *meshv1alpha1.CanaryStatus) bool { return st.Phase == meshv1alpha1.CanaryPromoted })
	if !statusAssignment(t, sc)[canaryShard].IsFull() {
		t.Errorf("promoted before the stable pods run the new version: the canary gave namespaces back")
	}
	eventually(t, 10*time.Second, "a RollStableShards Event naming the canary's images", func() (bool, error) {
		return hasEvent(t, c.Clientset(), "RollStableShards", "op=operator:v2"), nil
	})
	for i := range 2 {
		pod, err := c.Clientset().CoreV1().Pods(meshNamespace).Get(ctx, fmt.Sprintf("op-%d", i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod.Spec.Containers[0].Image = "operator:v2"
		if _, err := c.Clientset().CoreV1().Pods(meshNamespace).Update(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	sc = m.waitCanary(30*time.Second, "every namespace back on the stable shards", func(st *meshv1alpha1.CanaryStatus) bool {
		return st.Phase == meshv1alpha1.CanaryPromoted && len(st.Ranges) == 0 && st.Namespaces == 0
	})
	everyNamespaceStable(t, sc, namespaces)
	if a, stable := statusAssignment(t, sc), mustAssignment(t, sc.Status.Canary.StableAssignment); !a.Equal(stable) {
		t.Errorf("after the promotion the assignment is %v, want the stable one %v", a, stable)
	}
	if _, err := canaryCS.CoreV1().ConfigMaps(named[0]).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("canary writing %s after the promotion: %v, want the fence", named[0], err)
	}
	if _, err := stableCS.CoreV1().ConfigMaps(named[0]).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after"}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("stable shard %d writing %s after the promotion: %v", stableOwner, named[0], err)
	}
}

// A canary pod restarts: the analysis fails, the canary is rolled back automatically, the reason shows in status
// and an Event, and every namespace is owned by a stable shard again.
func TestCanaryRollsBackOnRestarts(t *testing.T) {
	t.Parallel()
	c := cluster.New(t, cluster.Options{})
	namespaces := teamNamespaces(t, c.Clientset(), 20)
	named := []string{"team-03", "team-07"}
	m, _ := startCanaryMesh(t, c, named, time.Minute)

	sc := m.waitCanary(30*time.Second, "the named namespaces handed over", func(st *meshv1alpha1.CanaryStatus) bool {
		return st.Phase == meshv1alpha1.CanaryProgressing && st.CurrentStep == -1 && st.StepStartTime != nil
	})
	if a := statusAssignment(t, sc); !a[canaryShard].ContainsNamespace(named[0]) || !a[canaryShard].ContainsNamespace(named[1]) {
		t.Fatalf("the canary owns %v, want %v", a[canaryShard], named)
	}
	setPodStatus(t, c.Clientset(), "op-canary", 3)
	sc = m.waitCanary(30*time.Second, "rolled back", func(st *meshv1alpha1.CanaryStatus) bool {
		return st.Phase == meshv1alpha1.CanaryRolledBack && len(st.Ranges) == 0 && st.Namespaces == 0
	})
	if msg := sc.Status.Canary.Message; !strings.Contains(msg, "pod restarts: 3, over the maximum 0") {
		t.Errorf("status message %q does not say why", msg)
	}
	if !hasEvent(t, c.Clientset(), "AnalysisFailed", "pod restarts: 3") {
		t.Error("no AnalysisFailed Event with the reason")
	}
	everyNamespaceStable(t, sc, namespaces)
	if a, stable := statusAssignment(t, sc), mustAssignment(t, sc.Status.Canary.StableAssignment); !a.Equal(stable) {
		t.Errorf("after the rollback the assignment is %v, want the stable one %v", a, stable)
	}
}

func mustAssignment(t *testing.T, sas []meshv1alpha1.ShardAssignment) shard.Assignment {
	t.Helper()
	return statusAssignment(t, &meshv1alpha1.ShardingConfig{Status: meshv1alpha1.ShardingConfigStatus{Assignment: sas}})
}
