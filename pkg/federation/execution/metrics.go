package execution

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// manifestsTotal counts the manifests that reconciles brought to their members, so a restart that redoes no work
// shows as skipped ones only.
var manifestsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "fedmesh_federation_execution_manifests_total",
	Help: "Manifests of Works brought to their member clusters, by outcome: applied (server-side applied to the " +
		"member) or skipped (the member object was already as desired and was only read).",
}, []string{"outcome"})

func init() { metrics.Registry.MustRegister(manifestsTotal) }
