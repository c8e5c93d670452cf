package cluster

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	readyGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "fedmesh_federation_cluster_ready", Help: "1 while the member cluster's Ready condition is True, else 0.",
	}, []string{"cluster"})
	probeSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "fedmesh_federation_cluster_probe_duration_seconds",
		Help:    "How long the member cluster's /readyz took to answer (or to fail), by outcome.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
	}, []string{"cluster", "outcome"})
)

func init() { metrics.Registry.MustRegister(readyGauge, probeSeconds) }

// forgetMetrics drops a deleted cluster's series.
func forgetMetrics(cluster string) {
	readyGauge.DeleteLabelValues(cluster)
	probeSeconds.DeletePartialMatch(prometheus.Labels{"cluster": cluster})
}
