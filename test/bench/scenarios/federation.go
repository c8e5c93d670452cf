package scenarios

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	"github.com/fedmesh/fedmesh/test/bench/suite"
	"github.com/fedmesh/fedmesh/test/cluster"
	"github.com/fedmesh/fedmesh/test/fedrun"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// FederationThroughput propagates Deployments over 3 members with the real federator, unsharded and sharded,
// against a bare client doing the same API writes; and again with one replica each, run as pods on kwok nodes.
func FederationThroughput() suite.Scenario {
	return suite.Scenario{
		Name: "federation-throughput",
		Description: "Deployments in many namespaces, one ClusterPropagationPolicy dividing them over 3 members that " +
			"run kube-controller-manager, so member status is real: with 0 replicas, and (variants -kwok) with 1 " +
			"replica each, which kube-scheduler places on kwok nodes where the pod becomes Ready. Timed from the " +
			"first template create until every template's status shows the generation observed by all members and " +
			"its replicas ready (aggregated status). The floor is a bare client doing the federation's API writes " +
			"per template (binding, Works, member applies, Work, binding and template status) as fast as the API " +
			"servers take them.",
		Run: runFederationThroughput,
	}
}

var (
	mFedTime = suite.Metric{Name: "converge", Unit: "s", Bound: "CPU: 4 API servers, their etcds and controllers " +
		"and the federator share 2 cores; the host API server is the busiest"}
	mFedRate       = suite.Metric{Name: "templates-per-s", Unit: "templates/s", Bound: mFedTime.Bound}
	mFedCPU        = suite.Metric{Name: "federator-cpu-per-template", Unit: "CPU-ms", Bound: "federator CPU (all shards, proxies not counted)"}
	mFedIdleCPU    = suite.Metric{Name: "federator-idle-cpu", Unit: "CPU-ms/s", Bound: "federator CPU (all shards) over " + fedIdleWindow.String() + " before the first template: its fixed cost"}
	mFedBusyCPU    = suite.Metric{Name: "federator-cpu-per-template-beyond-idle", Unit: "CPU-ms", Bound: "federator CPU (all shards) less its idle rate over the run"}
	mFedRSS        = suite.Metric{Name: "federator-rss-max-shard", Unit: "MiB", Bound: "federator memory"}
	mFedHostCPU    = suite.Metric{Name: "host-apiserver-cpu-per-template", Unit: "CPU-ms", Bound: "host kube-apiserver CPU"}
	mFedMachineCPU = suite.Metric{Name: "machine-cpu-per-template", Unit: "CPU-ms", Bound: "every process of the run: API servers, etcds, controllers, federator, manager, proxies and the benchmark itself"}
	mFedHostReqs   = suite.Metric{Name: "host-requests-per-template", Unit: "requests", Bound: "API calls the pipeline makes (LIST and WATCH left out)"}
	mFedMemberObjs = suite.Metric{Name: "member-deployments", Unit: "objects", Bound: "check: templates x target members"}
	mFedReconciles = suite.Metric{Name: "federator-reconciles-per-template", Unit: "reconciles", Bound: "the stages' passes (all shards)"}
	// mFedCPUPerKCM weighs the federator's CPU against work that does not change with it, to take out how fast the
	// machine ran in each repetition (see the note where it is compared).
	mFedCPUPerKCM = suite.Metric{Name: "federator-cpu-per-member-kcm-cpu", Unit: "ratio", Bound: "federator CPU (all shards) over the members' kube-controller-manager CPU in the same repetition"}
)

// mFedStagePasses are the passes per template of each stage (controller) of the federator, all shards.
var mFedStagePasses = func() []suite.Metric {
	var out []suite.Metric
	for _, stage := range []string{"detector-templates", "scheduler-resourcebinding", "binding", "execution", "work-status", "binding-status"} {
		out = append(out, suite.Metric{Name: "passes-" + stage, Unit: "reconciles", Bound: "the " + stage + " stage's passes per template (all shards)"})
	}
	return out
}()

const fedMembers = 3

// fedIdleWindow is how long the federator's CPU is measured with nothing to do, before the templates.
const fedIdleWindow = 5 * time.Second

// federatorLimits raise the federator's client limits, so that they are not what the benchmark measures.
var federatorLimits = []string{"--kube-api-qps=5000", "--kube-api-burst=10000", "--member-qps=5000", "--member-burst=10000"}

// fedSetup is one kind of federation run.
type fedSetup struct {
	// shards is the number of federator shards; 0 runs one federator straight on the host, -1 the floor.
	shards int
	// replicas of every template; with replicas, the members run kwok nodes the pods become Ready on.
	replicas  int32
	fakeNodes int
}

func (s fedSetup) variant() string {
	name := "floor"
	switch {
	case s.shards == 0:
		name = "federator-unsharded"
	case s.shards > 0:
		name = fmt.Sprintf("federator-%dshards", s.shards)
	}
	if s.replicas > 0 {
		name += "-kwok"
	}
	return name
}

func runFederationThroughput(ctx context.Context, env *suite.Env, res *suite.Result) error {
	templates, nsCount := env.Scale.Pick(2, 300, 10000), env.Scale.Pick(2, 30, 500)
	// The parameter lists only the shard counts that run.
	shardCounts := slices.DeleteFunc([]int{0, 2, 4}[:env.Scale.Pick(1, 3, 3)], func(n int) bool { return !env.Runs(fedSetup{shards: n}.variant()) })
	// Pods spread over the kwok nodes of each member; a fake node holds 250.
	fakeNodes := env.Scale.Pick(1, 2, 20)
	res.Param("templates", templates)
	res.Param("namespaces", nsCount)
	res.Param("members", fedMembers)
	res.Param("federatorShards", shardCounts)
	res.Param("kwokNodesPerMember", fakeNodes)
	setups := []fedSetup{{shards: -1}}
	for _, n := range shardCounts {
		setups = append(setups, fedSetup{shards: n})
	}
	kwokFloor := fedSetup{shards: -1, replicas: 1, fakeNodes: fakeNodes}
	kwokFederator := fedSetup{shards: 0, replicas: 1, fakeNodes: fakeNodes}
	setups = append(setups, kwokFloor, kwokFederator)
	var variants []suite.Variant
	for _, setup := range setups {
		variants = append(variants, suite.Variant{Name: setup.variant(), Run: func(ctx context.Context, _ int) (map[string]float64, error) {
			return fedRun(ctx, env, setup, templates, nsCount)
		}})
	}
	s, err := suite.Interleave(ctx, env, env.Reps, variants...)
	if err != nil {
		return err
	}
	res.Record(s, mFedTime, mFedRate, mFedCPU, mFedIdleCPU, mFedBusyCPU, mFedCPUPerKCM, mFedRSS, mFedHostCPU, mFedMachineCPU, mFedHostReqs, mFedReconciles, mFedMemberObjs)
	res.Record(s, mFedStagePasses...)
	floor := setups[0].variant()
	var xs []float64
	var rates, cpus [][]float64
	for _, setup := range setups[1 : 1+len(shardCounts)] {
		v := setup.variant()
		res.Compare(s, mFedTime.Name, "ratio", v, floor, "<= 2")
		xs = append(xs, float64(max(setup.shards, 1)))
		rates = append(rates, s[v][mFedRate.Name])
		cpus = append(cpus, s[v][mFedCPU.Name])
	}
	res.Compare(s, mFedTime.Name, "ratio", kwokFederator.variant(), kwokFloor.variant(), "<= 2")
	unsharded := setups[1].variant()
	for _, setup := range setups[2 : 1+len(shardCounts)] {
		// CPU per template must not rise with shards: sharding splits the work, it should not add to it.
		res.Compare(s, mFedCPU.Name, "ratio", setup.variant(), unsharded, "<= 1.1")
		res.Compare(s, mFedIdleCPU.Name, "ratio", setup.variant(), unsharded, "")
		res.Compare(s, mFedBusyCPU.Name, "ratio", setup.variant(), unsharded, "")
		res.Compare(s, mFedReconciles.Name, "ratio", setup.variant(), unsharded, "")
		res.Compare(s, mFedCPUPerKCM.Name, "ratio", setup.variant(), unsharded, "")
	}
	res.Compare(s, mFedHostCPU.Name, "ratio", unsharded, floor, "")
	// Everything shares the cores: converge tracks what the whole machine spends per template.
	res.Compare(s, mFedMachineCPU.Name, "ratio", unsharded, floor, "")
	res.Check(s, mFedRate.Name, unsharded, ">= 50")
	res.AddSeries("throughput", "federator", "federator shards (0 = unsharded, drawn at 1)", "templates/s", xs, rates)
	res.AddSeries("cpu", "federator", "federator shards (0 = unsharded, drawn at 1)", "CPU-ms per template", xs, cpus)
	res.Note("Each run starts a fresh host and %d members (not timed), so no run sees another's objects. The "+
		"namespaces exist before the federator's ShardingConfig, so the manager's split balances them over the shards.", fedMembers)
	res.Note("Limits raised so they bound nothing: the federator runs with %s; the members' kube-controller-manager "+
		"and kube-scheduler with --kube-api-qps=1000 (their default 20 and 50 held the floor itself to ~5 "+
		"templates/s).", strings.Join(federatorLimits, " "))
	res.Note("Everything shares the machine's 2 cores: the host and 3 member API servers with their etcds and " +
		"controllers, the federator (and, sharded, the manager and a proxy per shard), and the benchmark. Each " +
		"federator and proxy runs with GOMAXPROCS=1, as the chart runs them at their default CPU requests. The host " +
		"kube-apiserver is the busiest process; host-apiserver-cpu-per-template is the price of one template " +
		"there, and host-requests-per-template counts its API calls (LIST and WATCH aside). The federator " +
		"writes more than the floor for the same result: events, the claim label on the template, the " +
		"scheduler's placement, and each stage's status.")
	res.Note("federator-reconciles-per-template counts the passes of every stage over all shards, and passes-<stage> " +
		"each stage's, so that CPU per template that rises with shards can be told as more passes, and whose, or " +
		"as costlier ones.")
	res.Note("The variants run one after another, and the machine's speed drifts between them: in one run every " +
		"process, the members' kube-controller-managers included, spent 25-40%% more CPU per template in some " +
		"repetitions than in others. federator-cpu-per-member-kcm-cpu divides the federator's CPU by theirs in the " +
		"same repetition (they do the same work per template whatever the federator's shards), so its ratio between " +
		"variants shows what the shards cost with most of that drift taken out.")
	res.Note("The bar of 50 templates/s is 10x Karmada's controllers (client QPS 1000), which converge 1,000 " +
		"Deployments x 2 members in about 190 s, about 5 templates/s, on this kind of machine. On these 2 cores " +
		"the floor itself, a bare client making the fewest writes, is the ceiling of what any controller reaches.")
	return nil
}

// fedRun starts a federation and the federator (or, for the floor, nothing); then creates the templates and
// waits until all have converged.
func fedRun(ctx context.Context, env *suite.Env, setup fedSetup, templates, nsCount int) (map[string]float64, error) {
	f, err := startBenchFederation(ctx, setup.fakeNodes)
	if err != nil {
		return nil, err
	}
	defer f.Stop()
	namespaces := make([]string, nsCount)
	for i := range namespaces {
		namespaces[i] = fmt.Sprintf("fed-%03d", i)
		if err := f.Host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespaces[i]}}); err != nil {
			return nil, err
		}
	}
	floor := setup.shards < 0
	var run *fedrun.Run
	if !floor {
		if run, err = fedrun.Start(ctx, fedrun.Options{Host: f.Cluster().Host, Client: f.Host, BinDir: env.BinDir, Shards: setup.shards,
			FederatorArgs: federatorLimits, Pprof: env.ProfileDir != ""}); err != nil {
			return nil, err
		}
		defer run.Stop()
		if err := waitClustersReady(ctx, f.Host); err != nil {
			return nil, err
		}
	}
	if err := f.Host.Create(ctx, benchPolicy(f.memberNames())); err != nil {
		return nil, err
	}
	if floor {
		// The federator makes a template's namespace in a member when it first applies there; the floor has
		// them made beforehand, untimed, which favours the floor slightly.
		for _, m := range f.members {
			for _, ns := range namespaces {
				if err := m.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
					return nil, err
				}
			}
		}
	}
	conv, err := watchConvergence(ctx, unlimited(f.Cluster().Host.Config()))
	if err != nil {
		return nil, err
	}
	defer conv.stop()
	var idleCPU float64
	if !floor {
		// Each shard costs some CPU with nothing to do (leader election, cluster probes, resyncs, the runtime):
		// measured apart, it tells a shard's fixed cost from its cost per template.
		idleStart, cpu := time.Now(), federatorCPU()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(fedIdleWindow):
		}
		idleCPU = (federatorCPU() - cpu) * 1000 / time.Since(idleStart).Seconds()
	}
	hostBefore, err := readRequests(ctx, f.Cluster().Host.Config())
	if err != nil {
		return nil, err
	}
	hostPID := f.Cluster().Host.PID("kube-apiserver")
	reconcilesBefore, err := federatorReconciles(ctx, run)
	if err != nil {
		return nil, err
	}
	appliesBefore, err := federatorApplies(ctx, run)
	if err != nil {
		return nil, err
	}
	// The CPU readings bracket the templates' work alone: serving the scrapes above and below costs each
	// federator some, and more federators more.
	hostCPUBefore := cpuOf(hostPID)
	cpuBefore := federatorCPU()
	machineBefore := machineCPU()
	host := f.fastHost
	start := time.Now()
	prof := startProfiles(ctx, env.ProfileDir, fmt.Sprintf("%s-%s", setup.variant(), start.Format("150405")), run, unlimited(f.Cluster().Host.Config()), env.Logf)
	if floor {
		err = parallel(templates, 32, func(i int) error { return f.floor(ctx, benchDeployment(namespaces[i%nsCount], i, setup.replicas), i) })
	} else {
		err = parallel(templates, 32, func(i int) error {
			return host.Create(ctx, benchDeployment(namespaces[i%nsCount], i, setup.replicas))
		})
	}
	if err != nil {
		return nil, fmt.Errorf("templates: %w", err)
	}
	err = conv.wait(ctx, templates, run)
	cpuAfter, hostCPUAfter, machineAfter := federatorCPU(), cpuOf(hostPID), machineCPU()
	prof.stop()
	if err != nil {
		return nil, err
	}
	prof.heaps(ctx)
	elapsed := time.Since(start).Seconds()
	out := map[string]float64{mFedTime.Name: elapsed, mFedRate.Name: float64(templates) / elapsed}
	hostAfter, err := readRequests(ctx, f.Cluster().Host.Config())
	if err != nil {
		return nil, err
	}
	hostReqs := hostAfter.since(hostBefore)
	out[mFedHostReqs.Name] = hostReqs.total() / float64(templates)
	out[mFedHostCPU.Name] = (hostCPUAfter - hostCPUBefore) * 1000 / float64(templates)
	env.Logf("    host requests per template: %s", hostReqs.per(templates))
	machine := machineAfter.since(machineBefore)
	out[mFedMachineCPU.Name] = machine.total() / float64(templates)
	env.Logf("    CPU-ms per template: %s", machine.per(templates))
	if !floor {
		reconciles, err := federatorReconciles(ctx, run)
		if err != nil {
			return nil, err
		}
		reconciles = reconciles.since(reconcilesBefore)
		out[mFedReconciles.Name] = reconciles.total() / float64(templates)
		for _, m := range mFedStagePasses {
			out[m.Name] = reconciles[strings.TrimPrefix(m.Name, "passes-")] / float64(templates)
		}
		env.Logf("    federator reconciles per template: %s", reconciles.per(templates))
		applies, err := federatorApplies(ctx, run)
		if err != nil {
			return nil, err
		}
		env.Logf("    federator status applies per template: %s", applies.since(appliesBefore).per(templates))
		out[mFedCPU.Name] = (cpuAfter - cpuBefore) * 1000 / float64(templates)
		out[mFedIdleCPU.Name] = idleCPU
		out[mFedBusyCPU.Name] = out[mFedCPU.Name] - idleCPU*elapsed/float64(templates)
		if kcm := machine["kube-controller"]; kcm > 0 {
			out[mFedCPUPerKCM.Name] = (cpuAfter - cpuBefore) * 1000 / kcm
		}
		for _, pid := range suite.ChildPIDs("federator") {
			if u, err := suite.ReadUsage(pid); err == nil {
				out[mFedRSS.Name] = max(out[mFedRSS.Name], suite.MiB(u.RSSBytes))
			}
		}
	}
	objs := 0
	for _, m := range f.members {
		var list appsv1.DeploymentList
		if err := m.List(ctx, &list, client.MatchingLabels{"app": "bench"}); err != nil {
			return nil, err
		}
		objs += len(list.Items)
	}
	if want := templates * len(floorTargets(0, setup.replicas)); objs != want {
		return nil, fmt.Errorf("members hold %d bench Deployments, want %d", objs, want)
	}
	out[mFedMemberObjs.Name] = float64(objs)
	return out, nil
}

// cpuOf is the CPU time process pid has used; 0 when it cannot be read.
func cpuOf(pid int) float64 {
	u, err := suite.ReadUsage(pid)
	if err != nil {
		return 0
	}
	return u.CPUSeconds
}

// federatorCPU is the CPU time all running federator processes have used.
func federatorCPU() float64 { return suite.ChildCPU()["federator"] }

func benchDeployment(ns string, i int, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": "bench", "bench/template": fmt.Sprint(i)}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("web-%05d", i), Labels: map[string]string{"app": "bench"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/web:1"}}},
			},
		},
	}
}

func benchPolicy(members []string) *policyv1alpha1.ClusterPropagationPolicy {
	var weights []policyv1alpha1.StaticClusterWeight
	for _, m := range members {
		weights = append(weights, policyv1alpha1.StaticClusterWeight{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{m}}, Weight: 1})
	}
	return &policyv1alpha1.ClusterPropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "bench"},
		Spec: policyv1alpha1.PropagationSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment",
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "bench"}}}},
			Placement: policyv1alpha1.Placement{
				ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: members},
				ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
					ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
					ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
					WeightPreference:          &policyv1alpha1.ClusterPreferences{StaticWeightList: weights},
				},
			},
		},
	}
}

func waitClustersReady(ctx context.Context, host client.Client) error {
	return fedtest.WaitClustersReady(ctx, host, fedMembers, 90*time.Second)
}

func poll(ctx context.Context, timeout time.Duration, cond func() (bool, string, error)) error {
	return pollEvery(ctx, timeout, 100*time.Millisecond, cond)
}

// pollEvery calls cond every interval until it holds, fails, or timeout passes; the error then says what cond
// last reported.
func pollEvery(ctx context.Context, timeout, interval time.Duration, cond func() (bool, string, error)) error {
	deadline := time.Now().Add(timeout)
	var last string
	for {
		ok, what, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		last = what
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %s: %s", timeout, last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %s", ctx.Err(), last)
		case <-time.After(interval):
		}
	}
}

// benchFederation is a host and members (with kube-controller-manager) registered as in test/fedtest, with
// unlimited clients.
type benchFederation struct {
	*fedtest.Federation
	fastHost client.Client
	members  []client.Client
}

// startBenchFederation starts a host and members with kube-controller-manager and, with fakeNodes, that many kwok
// nodes each; the members' controllers run with limits far above what the benchmark asks of them.
func startBenchFederation(ctx context.Context, fakeNodes int) (*benchFederation, error) {
	raised := []string{"--kube-api-qps=1000", "--kube-api-burst=2000"}
	cf, err := cluster.StartFederation(ctx, cluster.FederationOptions{Members: fedMembers, Member: cluster.Options{
		ControllerManager: true, FakeNodes: fakeNodes, SchedulerFlags: raised,
		ControllerManagerFlags: append(raised, "--concurrent-deployment-syncs=50", "--concurrent-replicaset-syncs=50")}})
	if err != nil {
		return nil, err
	}
	bf, err := registerBenchFederation(ctx, cf)
	if err != nil {
		cf.Stop()
		return nil, err
	}
	return bf, nil
}

func registerBenchFederation(ctx context.Context, cf *cluster.Federation) (*benchFederation, error) {
	if err := cf.Host.InstallCRDs(ctx, fedtest.CRDDir()); err != nil {
		return nil, err
	}
	s := fedtest.Scheme()
	host, err := client.New(cf.Host.Config(), client.Options{Scheme: s})
	if err != nil {
		return nil, err
	}
	fast, err := client.New(unlimited(cf.Host.Config()), client.Options{Scheme: s})
	if err != nil {
		return nil, err
	}
	bf := &benchFederation{Federation: &fedtest.Federation{Federation: cf, Host: host, Scheme: s}, fastHost: fast}
	for _, m := range cf.Members {
		if err := bf.Register(ctx, m, fedtest.Options{}); err != nil {
			return nil, err
		}
		mc, err := client.New(unlimited(m.Config()), client.Options{Scheme: s})
		if err != nil {
			return nil, err
		}
		bf.members = append(bf.members, mc)
	}
	return bf, nil
}

// Cluster is the underlying host and members.
func (f *benchFederation) Cluster() *cluster.Federation { return f.Federation.Federation }

func (f *benchFederation) memberNames() []string {
	var out []string
	for _, m := range f.Federation.Members {
		out = append(out, m.Name())
	}
	return out
}
