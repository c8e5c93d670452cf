// Package filter is how the proxy sidecar keeps a shard's lists and watches inside its namespaces, and how it
// stamps shard labels on creates. It holds pure functions and stream transforms over request queries and
// response bodies (JSON, CBOR and protobuf); the HTTP plumbing in pkg/proxy calls them and does all the I/O.
//
// A list or watch goes Rewrite → upstream → ReadListHead + CheckShardInfo (or ReadListSummary + CheckSummary) /
// FilterList / WithoutRemainingItemCount / WatchReader (then WithoutRowObjects for a Table asked without its rows'
// objects); a create in label mode goes through StampCreate. A Prober remembers, per upstream resource, whether the
// API server honored shardSelector, as lists show it (shardInfo, or the entries' namespaces where a list cannot
// carry shardInfo) and as probes do (ExclusionPlan, CheckProbe), and when a probe that told nothing may be tried
// again (ProbeDue).
package filter
