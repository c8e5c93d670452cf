package shard

import (
	"errors"
	"strings"
)

// NamespaceField is the field path by which shardSelector hashes an object: its namespace.
const NamespaceField = "object.metadata.namespace"

// ErrEmptySet is returned when a selector is asked for an empty set. Neither a shardSelector nor a label selector
// can say "nothing": an empty shardSelector means "everything". A shard that owns nothing must not ask the API
// server at all.
var ErrEmptySet = errors.New("shard: the set is empty, and no selector selects nothing")

// ShardSelector renders s as the value of the API server's shardSelector query parameter (KEP-5866), e.g.
//
//	shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000') || shardRange(...)
//
// with each range half-open, [start, end), in the strict form the API server parses. It is the same text that
// k8s.io/apimachinery/pkg/sharding's Selector.String writes for those ranges, so it can be compared with the
// selector a list response echoes in metadata.shardInfo. An empty s gives ErrEmptySet. A full s gives a valid
// selector too, though a shard that owns everything has no need to send one.
func ShardSelector(s Set) (string, error) {
	if s.Empty() {
		return "", ErrEmptySet
	}
	var b strings.Builder
	for i, r := range s.ranges {
		if i > 0 {
			b.WriteString(" || ")
		}
		start, end := r.Hex()
		b.WriteString("shardRange(" + NamespaceField + ", '" + start + "', '" + end + "')")
	}
	return b.String(), nil
}
