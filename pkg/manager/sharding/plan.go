package sharding

import (
	"slices"

	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/pkg/shard"
)

// Published is what the proxies have been told: an epoch and every shard's ranges. While a handover is under way
// some ranges are owned by no shard; no range is ever owned by two.
type Published struct {
	Epoch      int64
	Assignment shard.Assignment
	// Clusters are the member clusters the proxies front; read afresh each time, not part of the status.
	Clusters []config.Cluster
}

// Initial is the first assignment of a ShardingConfig, or of one whose status is behind what its proxies enforce:
// it owns nothing, at the epoch after held, the highest epoch proxies of a ShardingConfig of that name are known to
// hold (0: none known). Proxies holding an earlier incarnation's ranges (deleted and created again, or a status lost
// or restored from a backup) take it as newer, and give those ranges up; the usual handover grants the split (see
// Target) once every proxy acknowledged it. Granting the split at once would give a proxy holding nothing, a new
// pod's, namespaces that another's proxy still enforces before any of them is heard from.
func Initial(held int64) Published {
	return Published{Epoch: held + 1, Assignment: shard.Assignment{}}
}

// Target is where the shards should end up from pub. A complete assignment over the same shards stays as it is
// (nothing moves without a reason); otherwise every range gets an owner and the existing namespaces are spread
// evenly over the shards, moving only the excess of the shards over their share. It depends only on pub (the
// status) and the namespaces, so a restarted manager picks up a handover where it was.
func Target(pub Published, shards []shard.ShardID, namespaces []string) shard.Assignment {
	if pub.Assignment.Validate() == nil && slices.Equal(pub.Assignment.Shards(), sortedUnique(shards)) {
		return pub.Assignment
	}
	return shard.RebalanceByNamespaces(pub.Assignment, shards, namespaces)
}

func sortedUnique(ids []shard.ShardID) []shard.ShardID {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}

// Step is the next assignment to publish on the way from pub to target. A handover is two steps: the revoke
// (every shard keeps only what it keeps in target; the rest is owned by nobody) and the grant (target). The caller
// publishes a step only once every live proxy acknowledged pub, so a range leaves its old owner before it reaches
// its new one. done is true when pub is target.
func Step(pub Published, target shard.Assignment) (next Published, done bool) {
	if pub.Assignment.Equal(target) {
		return pub, true
	}
	revoked := shard.Assignment{}
	excess := false
	for _, id := range pub.Assignment.Shards() {
		keep := pub.Assignment[id].Intersect(target[id])
		if !keep.Equal(pub.Assignment[id]) {
			excess = true
		}
		if !keep.Empty() {
			revoked[id] = keep
		}
	}
	if excess {
		return Published{Epoch: pub.Epoch + 1, Assignment: revoked}, false
	}
	return Published{Epoch: pub.Epoch + 1, Assignment: target.Clone()}, false
}
