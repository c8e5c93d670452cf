// Package cluster is the federation's Cluster controller for Push-mode member clusters: every probe interval it
// checks each member's /readyz, keeps the Cluster's Ready condition (with a small failure threshold so one blip
// does not flap it), taints clusters that are not ready or not reachable so the scheduler stops placing work there
// and failover moves it away, and records what the scheduler needs to know about the member: its version, served
// APIs, node counts and a resource summary (allocatable, allocated, allocating). On every Cluster, Pull mode too,
// it stamps a NoExecute taint written without timeAdded (a person's drain) with the time it first sees it, as
// Karmada's API does on write, so that bindings' tolerationSeconds for it count from then.
//
// The decisions are pure functions (condition.go, taints.go, summary.go); the Reconciler (controller.go) does the
// probing (probe.go), watches each member's nodes and pods, kept reduced to what the summary reads (usage.go), and
// writes the results. IsReady and NotReadySince read a Cluster's health for
// other controllers; the taint keys are exported for the scheduler.
package cluster
