package sharding

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
)

var (
	epochGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "fedmesh_manager_assignment_epoch", Help: "Epoch of the published assignment, per ShardingConfig.",
	}, []string{"shardingconfig"})
	shardNamespaces = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "fedmesh_manager_shard_namespaces", Help: "Namespaces each shard owns (skew shows here).",
	}, []string{"shardingconfig", "shard"})
	shardObjects = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "fedmesh_manager_shard_objects", Help: "Sharded objects in each shard's namespaces, as last counted (the skew an operator's memory feels).",
	}, []string{"shardingconfig", "shard"})
	handovers = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fedmesh_manager_handover_steps_total", Help: "Handover steps published, by phase (Revoked, Granted).",
	}, []string{"shardingconfig", "phase"})
	handoverGap = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "fedmesh_manager_handover_gap_seconds",
		Help:    "How long handed-over ranges had no owner: from the revoke to the grant (measured by this manager process).",
		Buckets: prometheus.ExponentialBuckets(0.05, 2, 12),
	}, []string{"shardingconfig"})
	nacks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fedmesh_manager_proxy_nacks_total", Help: "Configurations refused by a proxy (each new refusal once).",
	}, []string{"shardingconfig"})
	canaryStep = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "fedmesh_manager_canary_step", Help: "The canary's current step (status.canary.currentStep: -1 while only named namespaces moved).",
	}, []string{"shardingconfig"})
	canaryRollbacks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fedmesh_manager_canary_rollbacks_total",
		Help: "Canary rollbacks, by cause: analysis (a failed analysis) or action (the action Rollback).",
	}, []string{"shardingconfig", "cause"})
)

func init() {
	metrics.Registry.MustRegister(epochGauge, shardNamespaces, shardObjects, handovers, handoverGap, nacks, canaryStep, canaryRollbacks)
}

// setShardGauges makes the per-shard gauges of ShardingConfig key those of assignment: a shard no longer in it
// (scaled away) loses its series rather than keep its last count. Objects not counted this time stay as last
// counted.
func setShardGauges(key string, assignment []meshv1alpha1.ShardAssignment, counted bool) {
	self := prometheus.Labels{"shardingconfig": key}
	shardNamespaces.DeletePartialMatch(self)
	if counted {
		shardObjects.DeletePartialMatch(self)
	}
	for _, sa := range assignment {
		id := fmt.Sprint(sa.Shard)
		shardNamespaces.WithLabelValues(key, id).Set(float64(sa.Namespaces))
		if counted {
			shardObjects.WithLabelValues(key, id).Set(float64(sa.Objects))
		}
	}
}

// deleteGauges drops the gauges of ShardingConfig key, once it is gone: they would report its last state forever.
// The counters stay, as counters do.
func deleteGauges(key string) {
	self := prometheus.Labels{"shardingconfig": key}
	for _, g := range []*prometheus.GaugeVec{epochGauge, shardNamespaces, shardObjects, canaryStep} {
		g.DeletePartialMatch(self)
	}
}
