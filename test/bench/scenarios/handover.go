package scenarios

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/canary"
	"github.com/fedmesh/fedmesh/pkg/shard"
	"github.com/fedmesh/fedmesh/test/bench/suite"
	"github.com/fedmesh/fedmesh/test/cluster"
	"github.com/fedmesh/fedmesh/test/fedrun"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// Handover moves namespaces between the shards of an operator while it writes: 2 -> 3 shards and back, and a
// canary step and its rollback.
func Handover() suite.Scenario {
	return suite.Scenario{
		Name: "handover",
		Description: "Pods over many namespaces, and an operator sharded by the manager: a shard pod and proxy per " +
			"shard, and behind each proxy a pod informer, as the operator would have. The ShardingConfig goes from 2 " +
			"to 3 shards and back, then a canary takes a step (10% of the namespaces) and is rolled back, while a " +
			"prober writes (dry-run) to a ConfigMap in probe namespaces through every proxy every " +
			fmt.Sprint(probeInterval) + ". For each move: the time until the new assignment is in force (the " +
			"ShardingConfig Ready at its generation, every proxy acknowledging it) and until every shard's informer " +
			"shows exactly the namespaces its shard owns (served); each moved probe namespace's " +
			"ownerless gap, from the last write its old shard accepted to the first its new shard accepted (to within " +
			"the probe interval); the objects the shards' informers received again (relists after their watches " +
			"ended); and the writes the fence refused in namespaces the writing shard's informer still showed it.",
		Run: runHandover,
	}
}

var (
	mHandInForce  = suite.Metric{Name: "in-force", Unit: "s", Bound: "manager: revoke, acknowledgements, grant (xDS round trips)"}
	mHandServed   = suite.Metric{Name: "served", Unit: "s", Bound: "client-go's relist backoff (0.8 s, doubling) and the relists"}
	mHandGapP50   = suite.Metric{Name: "ownerless-gap-p50", Unit: "s", Bound: "handover protocol; probe interval " + fmt.Sprint(probeInterval)}
	mHandGapP99   = suite.Metric{Name: "ownerless-gap-p99", Unit: "s", Bound: mHandGapP50.Bound}
	mHandMoved    = suite.Metric{Name: "probe-namespaces-moved", Unit: "namespaces", Bound: "the new assignment"}
	mHandMgrGap   = suite.Metric{Name: "manager-gap-mean", Unit: "s", Bound: "manager's own measure (fedmesh_manager_handover_gap_seconds)"}
	mHandRelisted = suite.Metric{Name: "objects-relisted", Unit: "pods", Bound: "watches ended on every proxy whose ownership changed"}
	mHandFenced   = suite.Metric{Name: "fenced-writes", Unit: "writes", Bound: "informers lagging behind the fence"}
)

// probeInterval is how often the prober writes to every probe namespace through every proxy.
const probeInterval = 200 * time.Millisecond

const (
	opNamespace = "ops"
	opName      = "op"
)

func runHandover(ctx context.Context, env *suite.Env, res *suite.Result) error {
	nsCount, perNS := env.Scale.Pick(10, 100, 1000), env.Scale.Pick(20, 50, 100)
	probes := min(nsCount, 30)
	res.Param("pods", nsCount*perNS)
	res.Param("namespaces", nsCount)
	res.Param("probeNamespaces", probes)
	c, err := benchCluster(ctx, "bench-handover")
	if err != nil {
		return err
	}
	defer c.Stop()
	if err := c.InstallCRDs(ctx, fedtest.CRDDir()); err != nil {
		return err
	}
	admin := kubernetes.NewForConfigOrDie(unlimited(c.Config()))
	namespaces := podNamespaces(nsCount)
	if err := createPods(ctx, admin, namespaces, perNS); err != nil {
		return fmt.Errorf("create pods: %w", err)
	}
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: opNamespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	probed := probeNamespaces(namespaces, probes)
	for _, ns := range probed {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"}}
		if _, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	h, err := startHandoverMesh(ctx, env, c)
	if err != nil {
		return err
	}
	h.namespaces = append([]string{opNamespace}, namespaces...)
	defer h.stop()
	h.prober = startProber(probed)
	defer h.prober.stop()
	for id := range 2 {
		if err := h.addShard(ctx, id, false); err != nil {
			return err
		}
	}
	if _, err := h.waitInForce(ctx, 2, nil); err != nil {
		return err
	}
	if _, err := h.waitServed(ctx); err != nil {
		return err
	}
	s, err := suite.Interleave(ctx, env, env.Reps,
		suite.Variant{Name: "scale-out", Run: func(ctx context.Context, _ int) (map[string]float64, error) {
			return h.move(ctx, func() error { return h.addShard(ctx, 2, false) }, func(sc *meshv1alpha1.ShardingConfig) { sc.Spec.Shards = 3 },
				3, nil, nil)
		}},
		suite.Variant{Name: "scale-in", Run: func(ctx context.Context, _ int) (map[string]float64, error) {
			return h.move(ctx, nil, func(sc *meshv1alpha1.ShardingConfig) { sc.Spec.Shards = 2 }, 3, nil,
				func() error { return h.removeShard(ctx, 2) })
		}},
		suite.Variant{Name: "canary-step", Run: func(ctx context.Context, _ int) (map[string]float64, error) {
			return h.move(ctx, func() error { return h.addShard(ctx, 2, true) }, func(sc *meshv1alpha1.ShardingConfig) { sc.Spec.Canary = canaryStep() },
				3, func(st *meshv1alpha1.CanaryStatus) bool {
					return st != nil && st.Phase == meshv1alpha1.CanaryProgressing && st.CurrentStep == 0 && st.StepStartTime != nil
				}, nil)
		}},
		suite.Variant{Name: "canary-rollback", Run: func(ctx context.Context, _ int) (map[string]float64, error) {
			return h.move(ctx, nil, func(sc *meshv1alpha1.ShardingConfig) { sc.Spec.Canary.Action = meshv1alpha1.CanaryRollback },
				3, func(st *meshv1alpha1.CanaryStatus) bool {
					return st != nil && st.Phase == meshv1alpha1.CanaryRolledBack && st.Namespaces == 0 && len(st.Ranges) == 0
				}, func() error { return h.dropCanary(ctx) })
		}},
	)
	if err != nil {
		return fmt.Errorf("%w\n%s", err, h.mesh.Logs(20))
	}
	res.Record(s, mHandInForce, mHandServed, mHandGapP50, mHandGapP99, mHandMoved, mHandMgrGap, mHandRelisted, mHandFenced)
	for _, v := range []string{"scale-out", "scale-in", "canary-step", "canary-rollback"} {
		res.Check(s, mHandGapP99.Name, v, "<= 1")
	}
	res.Compare(s, mHandRelisted.Name, "ratio", "canary-step", "scale-out", "")
	res.Note("No probe namespace was ever written by two shards: every repetition checks that, after the first write " +
		"a namespace's new shard accepted, its old shard accepted none.")
	res.Note("A change of ownership ends the watches of every proxy whose ranges changed, and its operator relists all " +
		"it owns, not only the namespaces that moved: objects-relisted counts those relists. The fenced writes are " +
		"writes an operator would have made from its informer's stale view between the revoke and its relist.")
	return nil
}

// probeNamespaces picks n of namespaces to probe: up to half among those the canary's step takes, the rest spread
// evenly over the others, so that the canary step moves some of them as well as the shard-count changes do.
// (Names alike hash alike: the first n namespaces could all miss the canary's stripes of the hash space.)
func probeNamespaces(namespaces []string, n int) []string {
	taken := canary.PercentSet(canaryStep().Steps[0].Percent)
	var in, out []string
	for _, ns := range namespaces {
		if taken.ContainsNamespace(ns) {
			in = append(in, ns)
		} else {
			out = append(out, ns)
		}
	}
	picked := slices.Clone(in[:min(len(in), n/2)])
	rest := min(n-len(picked), len(out))
	for i := range rest {
		picked = append(picked, out[i*len(out)/rest])
	}
	return picked
}

// canaryStep is a canary that takes 10% of the namespaces and holds there.
func canaryStep() *meshv1alpha1.Canary {
	return &meshv1alpha1.Canary{
		Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": opName + "-canary"}},
		Steps:    []meshv1alpha1.CanaryStep{{Percent: 10, Pause: &metav1.Duration{Duration: time.Hour}}},
		Action:   meshv1alpha1.CanaryContinue,
	}
}

// handoverMesh is the sharded operator of the scenario: the mesh, and an informer per shard.
type handoverMesh struct {
	c         *cluster.Cluster
	client    client.Client
	mesh      *fedrun.Mesh
	operators map[int]*benchOperator
	prober    *prober
	// namespaces are those with pods: the benchmark's and the operator's own.
	namespaces []string
}

func startHandoverMesh(ctx context.Context, env *suite.Env, c *cluster.Cluster) (*handoverMesh, error) {
	cl, err := client.New(unlimited(c.Config()), client.Options{Scheme: fedtest.Scheme()})
	if err != nil {
		return nil, err
	}
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "patch", "update"}},
	}
	m, err := fedrun.StartMesh(ctx, fedrun.MeshOptions{Host: c, Client: cl, BinDir: env.BinDir, Namespace: opNamespace, Name: opName,
		Rules: rules, ManagerArgs: []string{"--kube-api-qps=1000", "--kube-api-burst=2000"}})
	if err != nil {
		return nil, err
	}
	h := &handoverMesh{c: c, client: cl, mesh: m, operators: map[int]*benchOperator{}}
	sc := &meshv1alpha1.ShardingConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: opNamespace, Name: opName},
		Spec: meshv1alpha1.ShardingConfigSpec{
			Selector:   metav1.LabelSelector{MatchLabels: map[string]string{"app": opName}},
			Shards:     2,
			Resources:  []meshv1alpha1.GroupResource{{Resource: "pods"}, {Resource: "configmaps"}},
			FilterMode: meshv1alpha1.FilterModeServer,
		},
	}
	if err := cl.Create(ctx, sc); err != nil {
		m.Stop()
		return nil, err
	}
	return h, nil
}

// addShard runs shard id (the canary's pod when canary), its informer, and has the prober write through it.
func (h *handoverMesh) addShard(ctx context.Context, id int, canary bool) error {
	add := h.mesh.AddShard
	if canary {
		add = h.mesh.AddCanary
	}
	if _, err := add(ctx, id); err != nil {
		return err
	}
	cs := kubernetes.NewForConfigOrDie(unlimited(h.mesh.Config(id)))
	op, err := startOperator(ctx, cs)
	if err != nil {
		return err
	}
	h.operators[id] = op
	h.prober.add(id, cs, op)
	return nil
}

func (h *handoverMesh) removeShard(ctx context.Context, id int) error {
	h.prober.remove(id)
	if op := h.operators[id]; op != nil {
		op.stop()
		delete(h.operators, id)
	}
	return h.mesh.RemoveShard(ctx, id)
}

// dropCanary removes the rolled-back canary from the spec and its pod, and waits for the 2 stable shards.
func (h *handoverMesh) dropCanary(ctx context.Context) error {
	if _, err := h.patch(ctx, func(sc *meshv1alpha1.ShardingConfig) { sc.Spec.Canary = nil }); err != nil {
		return err
	}
	if err := h.removeShard(ctx, 2); err != nil {
		return err
	}
	_, err := h.waitInForce(ctx, 2, nil)
	return err
}

func (h *handoverMesh) stop() {
	for _, op := range h.operators {
		op.stop()
	}
	h.mesh.Stop()
}

func (h *handoverMesh) patch(ctx context.Context, change func(*meshv1alpha1.ShardingConfig)) (int64, error) {
	var sc meshv1alpha1.ShardingConfig
	if err := h.client.Get(ctx, client.ObjectKey{Namespace: opNamespace, Name: opName}, &sc); err != nil {
		return 0, err
	}
	before := sc.DeepCopy()
	change(&sc)
	if err := h.client.Patch(ctx, &sc, client.MergeFrom(before)); err != nil {
		return 0, err
	}
	return sc.Generation, nil
}

// waitInForce waits until the ShardingConfig is Ready at its generation with proxies proxies acknowledging it and,
// with canary, until canary holds of its status.
func (h *handoverMesh) waitInForce(ctx context.Context, proxies int, canary func(*meshv1alpha1.CanaryStatus) bool) (*meshv1alpha1.ShardingConfig, error) {
	var sc meshv1alpha1.ShardingConfig
	err := pollEvery(ctx, 120*time.Second, 10*time.Millisecond, func() (bool, string, error) {
		if err := h.client.Get(ctx, client.ObjectKey{Namespace: opNamespace, Name: opName}, &sc); err != nil {
			return false, "", err
		}
		ready := meta.FindStatusCondition(sc.Status.Conditions, "Ready")
		ok := ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == sc.Generation &&
			sc.Status.ObservedGeneration == sc.Generation && int(sc.Status.ReadyProxies) == proxies
		if canary != nil {
			ok = ok && canary(sc.Status.Canary)
		}
		return ok, fmt.Sprintf("ready %+v, %d proxies, canary %+v", ready, sc.Status.ReadyProxies, sc.Status.Canary), nil
	})
	return &sc, err
}

// move measures one change: before (untimed) prepares it, change is patched into the ShardingConfig, and the clock
// runs until the new assignment is in force with proxies acknowledging it (and canary holding); after (untimed)
// cleans up. The ownerless gaps, relists and fenced writes are read once the operators' relists have settled.
func (h *handoverMesh) move(ctx context.Context, before func() error, change func(*meshv1alpha1.ShardingConfig), proxies int,
	canary func(*meshv1alpha1.CanaryStatus) bool, after func() error) (map[string]float64, error) {
	if before != nil {
		if err := before(); err != nil {
			return nil, err
		}
	}
	if _, err := h.waitServed(ctx); err != nil {
		return nil, err
	}
	mgrBefore, err := scrapeHistogram(ctx, h.mesh.ManagerMetrics(), "fedmesh_manager_handover_gap_seconds")
	if err != nil {
		return nil, err
	}
	relistedBefore := h.received()
	start := time.Now()
	if _, err := h.patch(ctx, change); err != nil {
		return nil, err
	}
	if _, err := h.waitInForce(ctx, proxies, canary); err != nil {
		return nil, err
	}
	inForce := time.Since(start)
	served, err := h.waitServed(ctx)
	if err != nil {
		return nil, err
	}
	end := time.Now()
	out := map[string]float64{mHandInForce.Name: inForce.Seconds(), mHandServed.Name: served.Sub(start).Seconds(),
		mHandRelisted.Name: float64(h.received() - relistedBefore)}
	moves, err := h.prober.moves(start, end)
	if err != nil {
		return nil, err
	}
	out[mHandMoved.Name] = float64(len(moves.gaps))
	slices.Sort(moves.gaps)
	out[mHandGapP50.Name] = suite.Quantile(moves.gaps, 0.5)
	out[mHandGapP99.Name] = suite.Quantile(moves.gaps, 0.99)
	out[mHandFenced.Name] = float64(moves.fenced)
	mgrAfter, err := scrapeHistogram(ctx, h.mesh.ManagerMetrics(), "fedmesh_manager_handover_gap_seconds")
	if err != nil {
		return nil, err
	}
	if n := mgrAfter.count - mgrBefore.count; n > 0 {
		out[mHandMgrGap.Name] = (mgrAfter.sum - mgrBefore.sum) / n
	}
	if after != nil {
		if err := after(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// received is how many pod events all operators' informers have received.
func (h *handoverMesh) received() int64 {
	var n int64
	for _, op := range h.operators {
		n += op.events.Load()
	}
	return n
}

// waitServed waits until every operator's informer holds the pods of exactly the namespaces its shard owns, and
// then until its relists are over (nothing received for a moment). It returns when the views first matched.
func (h *handoverMesh) waitServed(ctx context.Context) (time.Time, error) {
	var matched time.Time
	err := pollEvery(ctx, 180*time.Second, 20*time.Millisecond, func() (bool, string, error) {
		var sc meshv1alpha1.ShardingConfig
		if err := h.client.Get(ctx, client.ObjectKey{Namespace: opNamespace, Name: opName}, &sc); err != nil {
			return false, "", err
		}
		a, err := shard.ParseStatusAssignment(sc.Status.Assignment)
		if err != nil {
			return false, "", err
		}
		for id, op := range h.operators {
			for _, ns := range h.namespaces {
				if owns := a[shard.ShardID(id)].ContainsNamespace(ns); owns != op.sees(ns) {
					return false, fmt.Sprintf("shard %d owns %s: %v, its informer shows it: %v", id, ns, owns, !owns), nil
				}
			}
		}
		return true, "", nil
	})
	if err != nil {
		return matched, err
	}
	matched = time.Now()
	last, quiet := h.received(), time.Now()
	for time.Since(quiet) < 300*time.Millisecond && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
		if n := h.received(); n != last {
			last, quiet = n, time.Now()
		}
	}
	return matched, nil
}
