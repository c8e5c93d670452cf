// Package elect chooses one federator, among all shards and replicas, for the work that concerns the whole
// federation rather than a namespace: probing the member clusters and writing their Clusters' status, and
// claiming cluster-scoped templates. Every shard sees every Cluster, but a Cluster's health and capacity are facts
// about the whole member; probed by every shard, each member would be watched N times and its Cluster written by
// N writers. Every shard sees every cluster-scoped template too, whose bindings live in the system namespace.
//
// The choice is a Lease. Behind the sharding proxy a shard may write it only while it owns the Lease's namespace,
// so the holder is the shard that owns that namespace, and a handover of the namespace hands the Lease over too
// (the old holder's renewals are fenced, and it steps down before the Lease expires). The federator keeps the
// Lease in the system namespace: its holder may write the bindings and Works of cluster-scoped templates there.
package elect
