package sharding

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/fedmesh/fedmesh/pkg/apis"
	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/canary"
	"github.com/fedmesh/fedmesh/pkg/shard"
)

// series are the values of metric name for ShardingConfig key, as scraped, by shard ("" for a gauge of the whole
// config).
func series(t *testing.T, name, key string) map[string]float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, p := range m.GetLabel() {
				labels[p.GetName()] = p.GetValue()
			}
			if labels["shardingconfig"] == key {
				out[labels["shard"]] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

// shardsOfSizes is an assignment of len(namespaces) shards, shard i with namespaces[i] namespaces and 10 times
// as many objects.
func shardsOfSizes(namespaces ...int32) []meshv1alpha1.ShardAssignment {
	var out []meshv1alpha1.ShardAssignment
	for i, n := range namespaces {
		out = append(out, meshv1alpha1.ShardAssignment{Shard: int32(i), Namespaces: n, Objects: 10 * int64(n)})
	}
	return out
}

// The per-shard gauges are those of the shards the status lists: a shard scaled away (or a canary's removed)
// does not keep its last count, which would make the shards add up to more than there is.
func TestShardGaugesFollowTheShards(t *testing.T) {
	type write struct {
		assignment []meshv1alpha1.ShardAssignment
		counted    bool
	}
	for _, tc := range []struct {
		name                string
		writes              []write
		namespaces, objects map[string]float64
	}{
		{"scaled down", []write{{shardsOfSizes(4, 3, 3), true}, {shardsOfSizes(5, 5), true}},
			map[string]float64{"0": 5, "1": 5}, map[string]float64{"0": 50, "1": 50}},
		{"scaled down, objects not counted since", []write{{shardsOfSizes(4, 3, 3), true}, {shardsOfSizes(5, 5), false}},
			map[string]float64{"0": 5, "1": 5}, map[string]float64{"0": 40, "1": 30, "2": 30}}, // as last counted
		{"scaled up", []write{{shardsOfSizes(5, 5), true}, {shardsOfSizes(4, 3, 3), true}},
			map[string]float64{"0": 4, "1": 3, "2": 3}, map[string]float64{"0": 40, "1": 30, "2": 30}},
		{"never counted", []write{{shardsOfSizes(4, 3, 3), false}, {shardsOfSizes(5, 5), false}},
			map[string]float64{"0": 5, "1": 5}, map[string]float64{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, neighbour := "gauges/"+tc.name, "gauges/neighbour of "+tc.name
			setShardGauges(neighbour, shardsOfSizes(1, 2, 3), true)
			for _, w := range tc.writes {
				setShardGauges(key, w.assignment, w.counted)
			}
			if diff := cmp.Diff(tc.namespaces, series(t, "fedmesh_manager_shard_namespaces", key)); diff != "" {
				t.Errorf("fedmesh_manager_shard_namespaces (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.objects, series(t, "fedmesh_manager_shard_objects", key)); diff != "" {
				t.Errorf("fedmesh_manager_shard_objects (-want +got):\n%s", diff)
			}
			if n := len(series(t, "fedmesh_manager_shard_namespaces", neighbour)); n != 3 {
				t.Errorf("another ShardingConfig's gauge has %d shards, want its 3", n)
			}
		})
	}
}

// A ShardingConfig deleted takes its gauges along; another's stay.
func TestGaugesOfADeletedShardingConfig(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := apis.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(scheme).Build(), Publisher: &fakePublisher{}}
	for _, key := range []string{"ops/gone", "ops/kept"} {
		setShardGauges(key, shardsOfSizes(4, 3, 3), true)
		epochGauge.WithLabelValues(key).Set(7)
		canaryStep.WithLabelValues(key).Set(1)
	}
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: ktypes.NamespacedName{Namespace: "ops", Name: "gone"}}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"fedmesh_manager_assignment_epoch", "fedmesh_manager_shard_namespaces",
		"fedmesh_manager_shard_objects", "fedmesh_manager_canary_step"} {
		if got := series(t, name, "ops/gone"); len(got) != 0 {
			t.Errorf("%s of the deleted ShardingConfig: %v, want none", name, got)
		}
		if got := series(t, name, "ops/kept"); len(got) == 0 {
			t.Errorf("%s of another ShardingConfig: none, want it kept", name)
		}
	}
}

// The canary rollbacks are counted by cause: a failed analysis, or the action Rollback.
func TestCanaryRollbacksByCause(t *testing.T) {
	sc := testConfig(2)
	sc.Name = "rolled-back"
	count := func(cause string) float64 {
		families, err := metrics.Registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			for _, m := range f.GetMetric() {
				labels := map[string]string{}
				for _, p := range m.GetLabel() {
					labels[p.GetName()] = p.GetValue()
				}
				if f.GetName() == "fedmesh_manager_canary_rollbacks_total" && labels["shardingconfig"] == "ops/rolled-back" && labels["cause"] == cause {
					return m.GetCounter().GetValue()
				}
			}
		}
		return 0
	}
	for _, tc := range []struct {
		event canary.Event
		cause string
	}{
		{canary.Event{Type: canary.EventWarning, Reason: "AnalysisFailed"}, rollbackAnalysis},
		{canary.Event{Type: canary.EventNormal, Reason: "RolledBack"}, rollbackAction},
		{canary.Event{Type: canary.EventNormal, Reason: "Promoted"}, ""},
	} {
		cause := rollbackCause([]canary.Event{tc.event})
		if cause != tc.cause {
			t.Errorf("%s: cause %q, want %q", tc.event.Reason, cause, tc.cause)
		}
		before := map[string]float64{rollbackAnalysis: count(rollbackAnalysis), rollbackAction: count(rollbackAction)}
		rolloutResult{rollback: cause}.record(&Reconciler{Recorder: record.NewFakeRecorder(10)}, sc)
		for c, n := range before {
			want := n
			if c == tc.cause {
				want++
			}
			if got := count(c); got != want {
				t.Errorf("after %s: %s rollbacks %v, want %v", tc.event.Reason, c, got, want)
			}
		}
	}
}

// fedmesh_manager_canary_step is status.canary.currentStep: it stays while the status records the canary, also
// after spec.canary is removed while its namespaces return, and goes with status.canary, not at the manager's
// next restart.
func TestCanaryStepGaugeGoesWithTheCanary(t *testing.T) {
	sc := testConfig(2)
	sc.Name = "canary-removed"
	key := sc.Namespace + "/" + sc.Name
	stable := shard.Assignment{0: shard.Split(2)[0], 1: shard.Split(2)[1]}
	pub := Published{Epoch: 9, Assignment: stable}
	r := &Reconciler{Client: podClient(t), Recorder: record.NewFakeRecorder(10)}
	r.setDefaults()

	running := &meshv1alpha1.CanaryStatus{Phase: meshv1alpha1.CanaryProgressing, CurrentStep: 2}
	rolloutResult{status: running, step: &running.CurrentStep}.record(r, sc)
	if got := series(t, "fedmesh_manager_canary_step", key); !cmp.Equal(got, map[string]float64{"": 2}) {
		t.Fatalf("canary step while the canary runs at step 2: %v", got)
	}

	sc.Spec.Canary = nil
	sc.Status.Canary = &meshv1alpha1.CanaryStatus{Phase: meshv1alpha1.CanaryRolledBack, CurrentStep: 2}
	for _, reconcile := range []struct {
		name  string
		acked bool // whether every proxy acknowledged that the canary shard owns nothing
		want  map[string]float64
	}{
		{name: "spec.canary removed, its namespaces on their way back", acked: false, want: map[string]float64{"": 2}},
		{name: "the canary shard empty and acknowledged", acked: true, want: map[string]float64{}},
		{name: "no canary", acked: true, want: map[string]float64{}},
	} {
		ro := r.rollout(context.Background(), sc, pub, reconcile.acked, stable, shardPods{}, nil)
		ro.record(r, sc)
		sc.Status.Canary = ro.status // as writeStatus writes it
		if got := series(t, "fedmesh_manager_canary_step", key); !cmp.Equal(got, reconcile.want) {
			t.Errorf("%s (status.canary %+v): canary step series %v, want %v", reconcile.name, ro.status, got, reconcile.want)
		}
	}
}
