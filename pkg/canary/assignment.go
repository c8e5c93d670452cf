package canary

import "github.com/fedmesh/fedmesh/pkg/shard"

// CanaryAssignment is the assignment to publish for a rollout in State s: the stable shards' assignment with the
// canary's set (s.Canary) given to canaryShard. stable is the stable shards' own assignment, e.g. shard.Rebalance
// over their IDs, and must not mention canaryShard. shard.Diff from the published assignment to this one is the
// handover; an empty s.Canary gives every namespace back to its stable owner.
func CanaryAssignment(stable shard.Assignment, canaryShard shard.ShardID, s State) shard.Assignment {
	if s.Canary.Empty() {
		return stable.Clone()
	}
	return shard.Reassign(stable, s.Canary, canaryShard)
}
