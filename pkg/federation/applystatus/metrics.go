package applystatus

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// appliesTotal counts status applies by stage and kind: each is a write of a large object on the API server, and
// how many a stage makes per template tells where a federation's host load comes from.
var appliesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "fedmesh_federation_status_applies_total",
	Help: "Status applies sent to the host API server, by field manager (the stage that owns the fields) and kind.",
}, []string{"manager", "kind"})

func init() { metrics.Registry.MustRegister(appliesTotal) }
