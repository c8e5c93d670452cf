// Package sharding is the manager's ShardingConfig controller: it finds the operator's shard pods, decides which
// namespace-hash ranges each shard owns, and hands ranges between shards safely — revoke, wait until every live
// proxy of the losing shard acknowledged, then grant — publishing each shard's ownership to its proxies over xDS.
// The decisions are pure functions (plan.go); the controller reads the cluster, calls them, and writes the
// result to the ShardingConfig's status, which is the only memory of a handover in progress.
package sharding
