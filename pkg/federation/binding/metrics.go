package binding

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// propagationSeconds is the federation's propagation latency as a user feels it: from a binding's Works falling
// behind (rendered anew, or a cluster not yet applied) to every one of them applied: from the transition time of
// the False condition the binding's status shows (the API keeps it to the second) to the True verdict.
var propagationSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
	Name: "fedmesh_federation_propagation_seconds",
	Help: "Time from a ResourceBinding's FullyApplied condition turning False (its Works rendered anew, or not yet " +
		"applied) to it turning True again (every target cluster applied).",
	Buckets: prometheus.ExponentialBuckets(0.5, 2, 12), // 0.5s to ~17min
})

func init() { metrics.Registry.MustRegister(propagationSeconds) }
