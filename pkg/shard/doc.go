// Package shard is the pure ownership core of fedmesh: it hashes namespaces onto the 64-bit FNV-1a space, keeps
// sets of hash ranges, splits and rebalances that space over shards, and renders a shard's ranges as a KEP-5866
// shardSelector or as a hash-bucket label selector.
//
// Like etcd raft's core it does no I/O and keeps no clock: ownership changes come back as values (an Assignment, a
// list of Moves) and the manager and proxy act on them.
package shard
