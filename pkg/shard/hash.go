package shard

import "hash/fnv"

// NamespaceHash is the position of a namespace in the hash space: FNV-1a 64 of its name. It is the number that
// k8s.io/apimachinery/pkg/sharding.HashField prints as hex, so the proxy, the manager and the API server's
// shardSelector all place a namespace at the same point.
func NamespaceHash(ns string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(ns)) // never fails
	return h.Sum64()
}
