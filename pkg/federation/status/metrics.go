package status

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// memberInformersStarted counts the member watches started: each start lists every object fedmesh applied of
// that resource in the member, so one that keeps rising (a watch stopped and started again) is load on the member
// and on the federator alike.
var memberInformersStarted = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "fedmesh_federation_member_informers_started_total",
	Help: "Informers started on member clusters for the objects fedmesh applied there, by cluster and resource: " +
		"each start lists them all. It rises when a Work first needs a resource in a cluster, and again only when " +
		"the cluster's endpoint or credentials change.",
}, []string{"cluster", "resource"})

// holdLimit is how long a binding's status waits for its next cluster to report now (see holds): it rises above
// --status-coalesce-window's hold when the federator or the members lag.
var holdLimit = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "fedmesh_federation_binding_status_hold_seconds",
	Help: "How long a ResourceBinding's status is held for its next target cluster to report before what has come " +
		"is written: four status coalesce windows, more while the clusters' reports come further apart.",
})

// propagationSeconds is the federation's propagation latency as a user feels it: from a binding's Works falling
// behind (rendered anew, or a cluster not yet applied) to every one of them applied: from the transition time of
// the False condition the binding's status showed (the API keeps it to the second) to the write of the True one.
var propagationSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
	Name: "fedmesh_federation_propagation_seconds",
	Help: "Time from a ResourceBinding's FullyApplied condition turning False (its Works rendered anew, or not yet " +
		"applied) to it turning True again (every target cluster applied).",
	Buckets: prometheus.ExponentialBuckets(0.5, 2, 12), // 0.5s to ~17min
})

// observePropagation times a binding's FullyApplied condition going from prev, the False its status showed, to
// next, True, as written.
func observePropagation(prev, next *metav1.Condition) {
	if prev != nil && next != nil && prev.Status == metav1.ConditionFalse && !prev.LastTransitionTime.IsZero() && next.Status == metav1.ConditionTrue {
		propagationSeconds.Observe(time.Since(prev.LastTransitionTime.Time).Seconds())
	}
}

func init() { metrics.Registry.MustRegister(memberInformersStarted, holdLimit, propagationSeconds) }
