// Package sharding is the manager's ShardingConfig controller: it finds the operator's shard pods, decides which
// namespace-hash ranges each shard owns, and hands ranges between shards safely — revoke, wait until every live
// proxy of the losing shard acknowledged, then grant — publishing each shard's ownership to its proxies over xDS.
// A live proxy is one of a member pod, or any the xDS server knows to serve a shard of the ShardingConfig (strays:
// of a pod deleted with --force, replaced, or relabeled), until its lease runs out.
// The decisions are pure functions (plan.go); the controller reads the cluster, calls them, and writes the
// result to the ShardingConfig's status, which is the only memory of a handover in progress.
//
// A canary (spec.canary) is one more shard, shard spec.shards, formed by the pods of spec.canary.selector. Each
// reconcile runs one pkg/canary Step on what pkg/manager/canary observed of those pods and proxies, and the
// assignment to reach is the stable shards' own assignment with the canary's set carved out
// (canary.CanaryAssignment), reached through the same revoke, acknowledge, grant steps. See canary.go.
package sharding
