package scenarios

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/test/bench/suite"
	"github.com/fedmesh/fedmesh/test/cluster"
	"github.com/fedmesh/fedmesh/test/fedrun"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// FederationThroughput propagates Deployments over 3 members with the real federator, unsharded and sharded,
// against a bare client doing the same API writes.
func FederationThroughput() suite.Scenario {
	return suite.Scenario{
		Name: "federation-throughput",
		Description: "Deployments (0 replicas) in many namespaces, one ClusterPropagationPolicy dividing them over 3 " +
			"members that run kube-controller-manager, so member status is real. Timed from the first template " +
			"create until every template's status shows the generation observed by all members (aggregated " +
			"status). The floor is a bare client doing the federation's API writes per template (binding, Works, " +
			"member applies, Work, binding and template status) as fast as the API servers take them.",
		Run: runFederationThroughput,
	}
}

var (
	mFedTime = suite.Metric{Name: "converge", Unit: "s", Bound: "federator: host client at client-go's default 5 QPS; " +
		"floor: 4 API servers on 2 shared cores"}
	mFedRate       = suite.Metric{Name: "templates-per-s", Unit: "templates/s", Bound: mFedTime.Bound}
	mFedCPU        = suite.Metric{Name: "federator-cpu-per-template", Unit: "CPU-ms", Bound: "federator CPU"}
	mFedRSS        = suite.Metric{Name: "federator-rss-max-shard", Unit: "MiB", Bound: "federator memory"}
	mFedMemberObjs = suite.Metric{Name: "member-deployments", Unit: "objects", Bound: "check: templates x members"}
)

const fedMembers = 3

func runFederationThroughput(ctx context.Context, env *suite.Env, res *suite.Result) error {
	// Small is this small because the federator's host client runs at client-go's default 5 QPS (see the note).
	templates, nsCount := env.Scale.Pick(2, 10, 10000), env.Scale.Pick(2, 5, 500)
	shardCounts := []int{0, 2, 4}[:env.Scale.Pick(1, 2, 3)]
	res.Param("templates", templates)
	res.Param("namespaces", nsCount)
	res.Param("members", fedMembers)
	res.Param("federatorShards", shardCounts)
	variants := []suite.Variant{{Name: "floor", Run: func(ctx context.Context, _ int) (map[string]float64, error) {
		return fedRun(ctx, env, -1, templates, nsCount)
	}}}
	for _, n := range shardCounts {
		variants = append(variants, suite.Variant{Name: fedVariant(n), Run: func(ctx context.Context, _ int) (map[string]float64, error) {
			return fedRun(ctx, env, n, templates, nsCount)
		}})
	}
	s, err := suite.Interleave(ctx, env, env.Reps, variants...)
	if err != nil {
		return err
	}
	res.Record(s, mFedTime, mFedRate, mFedCPU, mFedRSS, mFedMemberObjs)
	var xs []float64
	var rates, cpus [][]float64
	for _, n := range shardCounts {
		res.Compare(s, mFedTime.Name, "ratio", fedVariant(n), "floor", "<= 2")
		xs = append(xs, float64(max(n, 1)))
		rates = append(rates, s[fedVariant(n)][mFedRate.Name])
		cpus = append(cpus, s[fedVariant(n)][mFedCPU.Name])
	}
	res.AddSeries("throughput", "federator", "federator shards (0 = unsharded, drawn at 1)", "templates/s", xs, rates)
	res.AddSeries("cpu", "federator", "federator shards (0 = unsharded, drawn at 1)", "CPU-ms per template", xs, cpus)
	res.Note("Each run starts a fresh host and %d members (not timed), so no run sees another's objects.", fedMembers)
	res.Note("What bounds the federator here is its own host client: cmd/federator builds it from the kubeconfig " +
		"with client-go's default limit of 5 QPS and burst 10, and has no flag to raise it (only --member-qps). " +
		"Each template costs about a dozen host writes, so one federator converges well under 1 template/s, " +
		"and the comparison with the floor measures that limit, not the controllers' work. Each shard has its " +
		"own limit, yet 2 shards were not faster: the benchmark namespaces are created after the ShardingConfig, " +
		"whose split was cut at the quantiles of the namespaces that existed then, so they may all fall to one " +
		"shard (per-shard template counts are not measured yet).")
	res.Note("For scale: Karmada's controllers (client QPS 1000) converge 1,000 Deployments x 2 members in about 190 s " +
		"on this kind of machine, about 5 templates/s; the bar is 10x that, 50 templates/s, at full scale.")
	return nil
}

func fedVariant(shards int) string {
	if shards == 0 {
		return "federator-unsharded"
	}
	return fmt.Sprintf("federator-%dshards", shards)
}

// fedRun starts a federation and, for shards >= 0, the federator; then creates the templates and waits until all
// have converged. shards < 0 runs the floor instead of the federator.
func fedRun(ctx context.Context, env *suite.Env, shards, templates, nsCount int) (map[string]float64, error) {
	f, err := startBenchFederation(ctx)
	if err != nil {
		return nil, err
	}
	defer f.Stop()
	var run *fedrun.Run
	if shards >= 0 {
		if run, err = fedrun.Start(ctx, fedrun.Options{Host: f.Cluster().Host, Client: f.Host, BinDir: env.BinDir, Shards: shards}); err != nil {
			return nil, err
		}
		defer run.Stop()
		if err := waitClustersReady(ctx, f.Host); err != nil {
			return nil, err
		}
	}
	namespaces := make([]string, nsCount)
	for i := range namespaces {
		namespaces[i] = fmt.Sprintf("fed-%03d", i)
		if err := f.Host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespaces[i]}}); err != nil {
			return nil, err
		}
	}
	if err := f.Host.Create(ctx, benchPolicy(f.memberNames())); err != nil {
		return nil, err
	}
	if shards < 0 {
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
	cpuBefore := federatorCPU()
	host := f.fastHost
	start := time.Now()
	if shards >= 0 {
		err = parallel(templates, 32, func(i int) error {
			return host.Create(ctx, benchDeployment(namespaces[i%nsCount], i))
		})
	} else {
		err = parallel(templates, 32, func(i int) error { return f.floor(ctx, benchDeployment(namespaces[i%nsCount], i)) })
	}
	if err != nil {
		return nil, fmt.Errorf("templates: %w", err)
	}
	if err := waitConverged(ctx, host, templates, run); err != nil {
		return nil, err
	}
	elapsed := time.Since(start).Seconds()
	out := map[string]float64{mFedTime.Name: elapsed, mFedRate.Name: float64(templates) / elapsed}
	if shards >= 0 {
		out[mFedCPU.Name] = (federatorCPU() - cpuBefore) * 1000 / float64(templates)
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
	if objs != templates*fedMembers {
		return nil, fmt.Errorf("members hold %d bench Deployments, want %d", objs, templates*fedMembers)
	}
	out[mFedMemberObjs.Name] = float64(objs)
	return out, nil
}

// federatorCPU is the CPU time all running federator processes have used.
func federatorCPU() float64 {
	var sum float64
	for _, pid := range suite.ChildPIDs("federator") {
		if u, err := suite.ReadUsage(pid); err == nil {
			sum += u.CPUSeconds
		}
	}
	return sum
}

func benchDeployment(ns string, i int) *appsv1.Deployment {
	labels := map[string]string{"app": "bench", "bench/template": fmt.Sprint(i)}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("web-%05d", i), Labels: map[string]string{"app": "bench"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](0),
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
	return poll(ctx, 90*time.Second, func() (bool, string, error) {
		var list clusterv1alpha1.ClusterList
		if err := host.List(ctx, &list); err != nil {
			return false, "", err
		}
		ready := 0
		for _, c := range list.Items {
			if meta.IsStatusConditionTrue(c.Status.Conditions, "Ready") {
				ready++
			}
		}
		return ready == fedMembers, fmt.Sprintf("%d of %d clusters Ready", ready, fedMembers), nil
	})
}

// waitConverged waits until every bench template's binding is FullyApplied with an applied status item from
// every member, and the template's status shows its generation observed. (The template's observedGeneration
// alone is not enough: it was seen set before the binding had any Work.)
func waitConverged(ctx context.Context, host client.Client, templates int, run *fedrun.Run) error {
	timeout := time.Duration(120+6*templates) * time.Second
	err := poll(ctx, timeout, func() (bool, string, error) {
		var list appsv1.DeploymentList
		if err := host.List(ctx, &list, client.MatchingLabels{"app": "bench"}); err != nil {
			return false, "", err
		}
		var rbs workv1alpha1.ResourceBindingList
		if err := host.List(ctx, &rbs); err != nil {
			return false, "", err
		}
		applied := map[string]bool{}
		for _, rb := range rbs.Items {
			n := 0
			for _, item := range rb.Status.AggregatedStatus {
				if item.Applied && item.Status != nil {
					n++
				}
			}
			if n == fedMembers && meta.IsStatusConditionTrue(rb.Status.Conditions, workv1alpha1.ConditionFullyApplied) {
				applied[rb.Namespace+"/"+rb.Spec.Resource.Name] = true
			}
		}
		done := 0
		for _, d := range list.Items {
			if d.Status.ObservedGeneration == d.Generation && applied[d.Namespace+"/"+d.Name] {
				done++
			}
		}
		return done == templates, fmt.Sprintf("%d of %d templates converged", done, templates), nil
	})
	if err != nil && run != nil {
		err = fmt.Errorf("%w\n%s", err, run.Logs(20))
	}
	return err
}

func poll(ctx context.Context, timeout time.Duration, cond func() (bool, string, error)) error {
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
		case <-time.After(100 * time.Millisecond):
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

func startBenchFederation(ctx context.Context) (*benchFederation, error) {
	cf, err := cluster.StartFederation(ctx, cluster.FederationOptions{Members: fedMembers, Member: cluster.Options{ControllerManager: true}})
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
