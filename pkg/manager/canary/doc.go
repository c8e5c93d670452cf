// Package canary is the manager's side of a namespace canary: it observes the canary shard's pods and proxies
// for pkg/canary's rollout core. The ShardingConfig controller (pkg/manager/sharding) runs the rollout; this
// package only measures.
//
// What is measured, per canary pod:
//   - API requests and errors (HTTP 5xx and 429, as spec.canary.analysis.maxErrorRatePercent defines them) from the
//     pod's proxy's fedmesh_proxy_requests_total, and breaker trips: transitions to open counted by its
//     fedmesh_proxy_breaker_trips_total (a breaker that opens and closes between two scrapes still counts).
//     The proxy's /metrics is at the pod's IP and the injected proxy container's port fedmesh-probes (where the
//     injected proxy's --probe-address listens, on every interface); the pod annotation fedmesh.io/proxy-metrics:
//     "host:port" overrides that. Tests, whose pods have no IP and whose proxies run on the test's host, put
//     127.0.0.1:<port> there. A pod whose metrics were not read in the step (no address, a failed scrape, or
//     only a baseline so far) is counted as Unmeasured, which holds the rollout when an error-rate or
//     breaker-trip bound is set: zero errors read is not zero errors.
//   - container restarts (status.containerStatuses[].restartCount, init containers included) and readiness (the
//     pod's Ready condition), from the pod's status.
//
// Counters are deltas since the rollout step began (State.StepStart). The baseline of each pod is its first
// observation in the step, or zero for a pod created after the step began. Baselines live in memory, keyed by the
// ShardingConfig and the step's start: a restarted manager takes new baselines, so what happened between the
// step's start and the restart is not counted. It says so (Measurement.MeasuredSince), and the rollout runs the
// step's pause again from then, so that the step is judged on a full window; a container whose last termination
// finished after the step's start counts as at least one restart in it. A counter that went down (a restarted
// proxy) counts from zero.
package canary
