// Package appfailover is application failover: a workload that stays unhealthy on a target cluster past its
// policy's failover.application.decisionConditions.tolerationSeconds leaves that cluster, as in Karmada. The
// cluster is taken out of the binding's clusters, with a gracefulEvictionTask as the purge mode says (its copy
// kept until the workload is healthy elsewhere, or for a person to remove), and the scheduler places the replicas
// on the other clusters; it does not place them back while the task stands.
//
// Which clusters to leave, and when to look again, is a pure function of the binding, when each cluster's item
// turned Unhealthy, and the time (Decide); the controller keeps those times and writes the decision.
package appfailover
