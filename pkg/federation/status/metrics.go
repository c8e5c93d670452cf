package status

import (
	"github.com/prometheus/client_golang/prometheus"
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

func init() { metrics.Registry.MustRegister(memberInformersStarted, holdLimit) }
