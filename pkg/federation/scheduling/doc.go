// Package scheduling is the scheduler's controller: it places ResourceBindings (of cluster-scoped templates too) on
// member clusters with the pure decisions of package scheduler, and writes the result to spec.clusters with the
// Scheduled condition and the scheduler fields of the status. It reschedules when a binding changes, when a
// Cluster comes, goes or changes what placement reads (every binding is looked at again; a result that does not
// change is not written), when only a Cluster's free resources change (the bindings that found no room, and the
// duplicated ones left off that cluster for room), when a cluster the binding is on stays unhealthy past the
// binding's tolerations (failover), and when the workload's health on a cluster or, with statePreservation, its
// reported state changes (application failover, the state recorded). Waiting bindings are taken in
// schedule-priority order.
package scheduling
