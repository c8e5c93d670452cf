package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"
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

// startPromotingCanaryMesh is startCanaryMesh whose stable shards are StatefulSet op (2 replicas, operator:v1,
// run by the cluster's kube-controller-manager) and whose canary names it for the promotion (pause: promotionPause).
// The returned kubelet makes the StatefulSet's pods Ready and runs their proxies; the test must keep calling tick.
func startPromotingCanaryMesh(t *testing.T, c *cluster.Cluster, named []string, pause, promotionPause time.Duration) (*mesh, *proxyInstance, *stableKubelet) {
	t.Helper()
	m := startMesh(t, c)
	replicas := int32(2)
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "op", Namespace: meshNamespace},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            &replicas,
			Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": "op"}},
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "op"}},
				Spec: corev1.PodSpec{ServiceAccountName: "op",
					Containers: []corev1.Container{{Name: "op", Image: "operator:v1"}}},
			},
		},
	}
	if _, err := c.Clientset().AppsV1().StatefulSets(meshNamespace).Create(context.Background(), sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	k := &stableKubelet{m: m, uids: map[string]ktypes.UID{}, kills: map[string]func(){}}
	eventually(t, 30*time.Second, "the StatefulSet's pods ready with their proxies", func() (bool, error) {
		return k.tick() == 2, nil
	})
	k.replaced = nil
	cp := m.addCanaryPod()
	sc := canaryConfig(named, pause)
	sc.Spec.Canary.Promotion = &meshv1alpha1.CanaryPromotion{StatefulSet: "op", Container: "op",
		Pause: &metav1.Duration{Duration: promotionPause}}
	if err := m.client.Create(context.Background(), sc); err != nil {
		t.Fatal(err)
	}
	return m, cp, k
}

// stableKubelet plays the kubelet and the proxy sidecar for the StatefulSet's pods, as there are no nodes here:
// each new pod (by UID) is marked Running and Ready, and its proxy replaces the previous pod's proxy at the same
// addresses (as a sidecar restarts with its pod).
type stableKubelet struct {
	m        *mesh
	uids     map[string]ktypes.UID
	kills    map[string]func()
	replaced []replacement // pods recreated after the first ones, in order
}

type replacement struct {
	pod   string
	image string
	at    time.Time
	// rolling: the status said the pod's batch was rolling, and the canary still owned everything, while the
	// replacement was not ready yet.
	rolling bool
}

// tick looks at the StatefulSet's pods once and returns how many are ready with a proxy.
func (k *stableKubelet) tick() int {
	t := k.m.t
	t.Helper()
	pods, err := k.m.c.Clientset().CoreV1().Pods(meshNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: "app=op"})
	if err != nil {
		t.Fatal(err)
	}
	ready := 0
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.DeletionTimestamp != nil {
			continue
		}
		if k.uids[pod.Name] == pod.UID {
			ready++
			continue
		}
		shardOf, err := strconv.Atoi(pod.Labels["apps.kubernetes.io/pod-index"])
		if err != nil {
			t.Fatalf("pod %s has no pod-index label: %v", pod.Name, pod.Labels)
		}
		if kill := k.kills[pod.Name]; kill != nil {
			kill()
			sc := k.m.shardingConfig()
			rolling := false
			if st := sc.Status.Canary; st != nil && st.Promotion != nil {
				rolling = slices.Contains(st.Promotion.Rolling, pod.Name) && statusAssignment(t, sc)[canaryShard].IsFull()
			}
			k.replaced = append(k.replaced, replacement{pod.Name, pod.Spec.Containers[0].Image, time.Now(), rolling})
		}
		setPodStatus(t, k.m.c.Clientset(), pod.Name, 0)
		p := k.m.proxies[shardOf]
		if p == nil {
			p = &proxyInstance{addr: freeAddr(t), probes: freeAddr(t)}
			k.m.proxies[shardOf] = p
		}
		k.kills[pod.Name] = k.m.runProxy(pod, shardOf, p)
		k.uids[pod.Name] = pod.UID
		ready++
	}
	return ready
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

// Happy path: the canary takes the named namespaces, serves them, takes 50% and then everything; promoted, the
// manager rolls the stable StatefulSet to the canary's image one shard at a time with a pause after each, and then
// every namespace returns to the stable shards it came from.
func TestCanaryPromotes(t *testing.T) {
	t.Parallel()
	c := cluster.New(t, cluster.Options{ControllerManager: true})
	ctx := context.Background()
	namespaces := teamNamespaces(t, c.Clientset(), 20)
	named := []string{"team-03", "team-07"}
	const promotionPause = 2 * time.Second
	m, cp, kubelet := startPromotingCanaryMesh(t, c, named, 3*time.Second, promotionPause)

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

	// Promote: the manager rolls the StatefulSet; the canary keeps everything until every stable pod runs its image.
	m.patchCanary(func(c *meshv1alpha1.Canary) { c.Action = meshv1alpha1.CanaryPromote })
	sc = m.waitCanary(30*time.Second, "phase Promoted", func(st *meshv1alpha1.CanaryStatus) bool {
		kubelet.tick()
		return st.Phase == meshv1alpha1.CanaryPromoted
	})
	if !statusAssignment(t, sc)[canaryShard].IsFull() && (sc.Status.Canary.Promotion == nil || !sc.Status.Canary.Promotion.Done) {
		t.Errorf("promoted before the stable pods run the new version: the canary gave namespaces back")
	}
	eventually(t, 60*time.Second, "every namespace back on the stable shards after the roll", func() (bool, error) {
		kubelet.tick()
		st := m.shardingConfig().Status.Canary
		if st.Promotion == nil || !st.Promotion.Done || len(st.Ranges) != 0 || st.Namespaces != 0 {
			return false, fmt.Errorf("canary status %+v, promotion %+v", st, st.Promotion)
		}
		return true, nil
	})
	sc = m.waitCanary(30*time.Second, "every proxy acknowledged the stable assignment", func(st *meshv1alpha1.CanaryStatus) bool {
		kubelet.tick()
		return st.Phase == meshv1alpha1.CanaryPromoted && len(st.Ranges) == 0
	})
	if p := sc.Status.Canary.Promotion; p.Image != "operator:v2" || p.Batches != 2 || p.BatchesDone != 2 {
		t.Errorf("promotion status %+v, want image operator:v2 and 2 of 2 batches", p)
	}
	// The StatefulSet runs the new image, its pods were replaced shard by shard (OnDelete meanwhile), the second
	// only after the first was ready and its pause was over, and its own update strategy is back.
	sts, err := c.Clientset().AppsV1().StatefulSets(meshNamespace).Get(ctx, "op", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img := sts.Spec.Template.Spec.Containers[0].Image; img != "operator:v2" || sts.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType {
		t.Errorf("StatefulSet template image %s, strategy %s; want operator:v2, RollingUpdate given back", img, sts.Spec.UpdateStrategy.Type)
	}
	if saved, ok := sts.Annotations["mesh.fedmesh.io/update-strategy-before-promotion"]; ok {
		t.Errorf("the promotion is done but the StatefulSet still keeps the strategy it replaced: %s", saved)
	}
	pods, err := c.Clientset().CoreV1().Pods(meshNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=op"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Spec.Containers[0].Image != "operator:v2" {
			t.Errorf("stable pod %s runs %s, want operator:v2", p.Name, p.Spec.Containers[0].Image)
		}
	}
	if r := kubelet.replaced; len(r) != 2 || r[0].pod != "op-0" || r[1].pod != "op-1" || r[0].image != "operator:v2" ||
		r[1].image != "operator:v2" || !r[0].rolling || !r[1].rolling {
		t.Errorf("replaced pods %+v, want op-0 then op-1, on operator:v2, each shown rolling while the canary kept everything", r)
	} else if gap := r[1].at.Sub(r[0].at); gap < promotionPause {
		t.Errorf("op-1 was replaced %v after op-0, before the pause of %v was over", gap, promotionPause)
	}
	for _, want := range []string{"RollingBatch/batch 1 of 2: shard 0", "BatchRolled/pods op-0", "RollingBatch/batch 2 of 2: shard 1",
		"BatchRolled/pods op-1", "StableRolledOut/every stable pod (2)", "Released/"} {
		reason, note, _ := strings.Cut(want, "/")
		if !hasEvent(t, c.Clientset(), reason, note) {
			t.Errorf("no %s Event saying %q", reason, note)
		}
	}
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
