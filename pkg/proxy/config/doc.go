// Package config is the proxy's configuration: the ownership a shard enforces (its hash ranges, how lists are
// narrowed, its upstream clusters, its Lease) and its traffic policy. Each document arrives whole and versioned —
// over xDS from the manager, or from a file — and is validated before it replaces the last good one, which is
// persisted so a restarted proxy serves it at once. Before the first good ownership the proxy owns nothing.
package config
