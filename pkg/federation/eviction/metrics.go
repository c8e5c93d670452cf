package eviction

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// evictionsDone counts the eviction tasks ended, by why: a graceful eviction that keeps ending by timeout says
// the workloads it moved do not turn healthy where they went (or their kind's health is not judged in time).
var evictionsDone = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "fedmesh_federation_graceful_evictions_done_total",
	Help: "Graceful eviction tasks ended, by outcome: healthy (the workload is healthy where it moved), timeout " +
		"(its grace period ran out first) or unsuppressed (suppressDeletion was cleared).",
}, []string{"outcome"})

// outcomes are the metric's label values of Assess's reasons.
var outcomes = map[string]string{DoneHealthy: "healthy", DoneTimedOut: "timeout", DoneUnsuppress: "unsuppressed"}

func init() { metrics.Registry.MustRegister(evictionsDone) }
