package scenarios

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/shard"
	"github.com/fedmesh/fedmesh/test/bench/suite"
	"github.com/fedmesh/fedmesh/test/fedrun"
)

// ColdStart restarts a federator shard with its templates propagated and converged, and measures its catching up.
func ColdStart() suite.Scenario {
	return suite.Scenario{
		Name: "cold-start",
		Description: "Deployments propagated over 3 members by a federator of 2 shards behind proxies, converged. " +
			"Shard 0's federator is stopped and started again: the time until it is ready, and until it has caught " +
			"up (every template and Work of its namespaces taken up again and every queue empty), the CPU that " +
			"took, and the work it redid: writes to the host (leases aside) and to the members, and Works whose " +
			"resourceVersion changed. None should be redone: the templates are where they were.",
		Run: runColdStart,
	}
}

var (
	mColdReady     = suite.Metric{Name: "ready", Unit: "s", Bound: "informers' initial lists (host through the proxy, members)"}
	mColdCaughtUp  = suite.Metric{Name: "caught-up", Unit: "s", Bound: "reconciling every object of the shard once: member reads, no writes"}
	mColdCPU       = suite.Metric{Name: "federator-cpu", Unit: "CPU-s", Bound: "federator CPU while catching up"}
	mColdRSS       = suite.Metric{Name: "federator-rss", Unit: "MiB", Bound: "federator memory once caught up"}
	mColdHostW     = suite.Metric{Name: "host-writes", Unit: "requests", Bound: "work redone on the host (leases, events aside)"}
	mColdMemberW   = suite.Metric{Name: "member-writes", Unit: "requests", Bound: "work redone on the members"}
	mColdWorksDiff = suite.Metric{Name: "works-changed", Unit: "Works", Bound: "Works rewritten"}
	mColdObjects   = suite.Metric{Name: "shard-works", Unit: "Works", Bound: "the shard's share of the namespaces"}
)

func runColdStart(ctx context.Context, env *suite.Env, res *suite.Result) error {
	templates, nsCount := env.Scale.Pick(4, 300, 10000), env.Scale.Pick(2, 30, 500)
	res.Param("templates", templates)
	res.Param("namespaces", nsCount)
	res.Param("members", fedMembers)
	res.Param("federatorShards", 2)
	f, err := startBenchFederation(ctx, 0)
	if err != nil {
		return err
	}
	defer f.Stop()
	namespaces := make([]string, nsCount)
	for i := range namespaces {
		namespaces[i] = fmt.Sprintf("fed-%03d", i)
		if err := f.Host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespaces[i]}}); err != nil {
			return err
		}
	}
	run, err := fedrun.Start(ctx, fedrun.Options{Host: f.Cluster().Host, Client: f.Host, BinDir: env.BinDir, Shards: 2, FederatorArgs: federatorLimits})
	if err != nil {
		return err
	}
	defer run.Stop()
	if err := waitClustersReady(ctx, f.Host); err != nil {
		return err
	}
	if err := f.Host.Create(ctx, benchPolicy(f.memberNames())); err != nil {
		return err
	}
	conv, err := watchConvergence(ctx, unlimited(f.Cluster().Host.Config()))
	if err != nil {
		return err
	}
	defer conv.stop()
	start := time.Now()
	if err := parallel(templates, 32, func(i int) error { return f.fastHost.Create(ctx, benchDeployment(namespaces[i%nsCount], i, 0)) }); err != nil {
		return err
	}
	if err := conv.wait(ctx, templates, run); err != nil {
		return err
	}
	res.Note("The %d templates converged in %.0f s before the first restart (not a figure of this scenario).", templates, time.Since(start).Seconds())
	s, err := suite.Interleave(ctx, env, env.Reps, suite.Variant{Name: "restart-shard-0", Run: func(ctx context.Context, _ int) (map[string]float64, error) {
		return restartShard(ctx, f, run, 0, env.Logf)
	}})
	if err != nil {
		return err
	}
	res.Record(s, mColdReady, mColdCaughtUp, mColdCPU, mColdRSS, mColdHostW, mColdMemberW, mColdWorksDiff, mColdObjects)
	res.Check(s, mColdWorksDiff.Name, "restart-shard-0", "<= 0")
	res.Check(s, mColdMemberW.Name, "restart-shard-0", "<= 0")
	res.Note("Catching up reads each Work's objects from its member (one GET each) to see that they are as desired, " +
		"and writes nothing; the execution stage applies only a Work that changed or a member object that drifted.")
	return nil
}

// notRedone are the resources whose writes are not work redone: leader-election Leases and Events, and the
// Endpoints the API servers themselves keep trying to write (their own address, on loopback here).
var notRedone = []string{"leases", "events", "endpoints"}

// restartShard stops and starts shard id's federator and measures its catching up.
func restartShard(ctx context.Context, f *benchFederation, run *fedrun.Run, id int, logf func(string, ...any)) (map[string]float64, error) {
	works, err := shardWorks(ctx, f.fastHost, id)
	if err != nil {
		return nil, err
	}
	hostBefore, err := readRequests(ctx, f.Cluster().Host.Config())
	if err != nil {
		return nil, err
	}
	membersBefore := make([]tally, len(f.Cluster().Members))
	for i, m := range f.Cluster().Members {
		if membersBefore[i], err = readRequests(ctx, m.Config()); err != nil {
			return nil, err
		}
	}
	run.StopFederator(id)
	start := time.Now()
	if err := run.StartFederator(id); err != nil {
		return nil, err
	}
	ready := time.Since(start)
	metrics := run.FederatorMetrics(id)
	err = pollEvery(ctx, 30*time.Minute, 50*time.Millisecond, func() (bool, string, error) {
		fams, err := scrape(ctx, metrics)
		if err != nil {
			return false, "", err
		}
		added := fams.sum("workqueue_adds_total", map[string]string{"name": "execution"})
		depth := fams.sum("workqueue_depth", nil)
		busy := fams.sum("workqueue_unfinished_work_seconds", nil)
		return added >= float64(len(works)) && depth == 0 && busy == 0,
			fmt.Sprintf("%.0f of %d Works taken up, %.0f queued, %.3g s of work unfinished", added, len(works), depth, busy), nil
	})
	if err != nil {
		return nil, err
	}
	caughtUp := time.Since(start)
	out := map[string]float64{mColdReady.Name: ready.Seconds(), mColdCaughtUp.Name: caughtUp.Seconds(), mColdObjects.Name: float64(len(works)),
		mColdMemberW.Name: 0, mColdWorksDiff.Name: 0}
	if u, err := suite.ReadUsage(run.FederatorPID(id)); err == nil {
		out[mColdCPU.Name], out[mColdRSS.Name] = u.CPUSeconds, suite.MiB(u.RSSBytes)
	}
	// Anything redone would follow the catching up closely: give it a moment to show.
	time.Sleep(2 * time.Second)
	hostAfter, err := readRequests(ctx, f.Cluster().Host.Config())
	if err != nil {
		return nil, err
	}
	hostReqs := hostAfter.since(hostBefore)
	if out[mColdHostW.Name] = hostReqs.writes(notRedone...); out[mColdHostW.Name] > 0 {
		logf("    host requests while catching up: %s", hostReqs.per(1))
	}
	for i, m := range f.Cluster().Members {
		after, err := readRequests(ctx, m.Config())
		if err != nil {
			return nil, err
		}
		reqs := after.since(membersBefore[i])
		if n := reqs.writes(notRedone...); n > 0 {
			out[mColdMemberW.Name] += n
			logf("    %s requests while catching up: %s", m.Name(), reqs.per(1))
		}
	}
	now, err := shardWorks(ctx, f.fastHost, id)
	if err != nil {
		return nil, err
	}
	for key, rv := range works {
		if now[key] != rv {
			out[mColdWorksDiff.Name]++
		}
	}
	return out, nil
}

// shardWorks are the resourceVersions of the Works in the namespaces shard id owns, by namespace/name.
func shardWorks(ctx context.Context, c client.Client, id int) (map[string]string, error) {
	var sc meshv1alpha1.ShardingConfig
	if err := c.Get(ctx, client.ObjectKey{Namespace: names.SystemNamespace, Name: fedrun.Name}, &sc); err != nil {
		return nil, err
	}
	a, err := shard.ParseStatusAssignment(sc.Status.Assignment)
	if err != nil {
		return nil, err
	}
	var list workv1alpha1.WorkList
	if err := c.List(ctx, &list); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, w := range list.Items {
		if a[shard.ShardID(id)].ContainsNamespace(w.Namespace) {
			out[w.Namespace+"/"+w.Name] = w.ResourceVersion
		}
	}
	return out, nil
}
