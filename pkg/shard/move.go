package shard

import "fmt"

// Move is one step of a handover: the hashes in Ranges go from shard From to shard To. The manager first revokes
// Ranges from From and waits until every proxy of From has acknowledged, and only then grants them to To, so that
// no hash ever has two owners. From is NoShard when nobody owned the ranges (grant only); To is NoShard when nobody
// will (revoke only).
type Move struct {
	Ranges   Set
	From, To ShardID
}

// String is the move for logs: "shard 1 -> shard 3: {[0x...,0x...)}".
func (m Move) String() string {
	return fmt.Sprintf("%s -> %s: %s", shardName(m.From), shardName(m.To), m.Ranges)
}

func shardName(id ShardID) string {
	if id == NoShard {
		return "nobody"
	}
	return fmt.Sprintf("shard %d", id)
}

// Diff is the handover that turns old into new: one Move per pair of shards between which hashes change hands,
// ordered by From and then To. Hashes that keep their owner are not mentioned. Both assignments should be valid
// (see Validate); if one gives a hash to two shards, Diff moves it from, or to, each of them.
func Diff(old, new Assignment) []Move {
	oldOwned, newOwned := old.Owned(), new.Owned()
	owned := func(a Assignment, all Set, id ShardID) Set {
		if id == NoShard {
			return all.Complement() // what nobody owns
		}
		return a[id]
	}
	// NoShard is -1, so putting it first keeps the moves ordered by ID.
	var moves []Move
	for _, from := range append([]ShardID{NoShard}, old.Shards()...) {
		for _, to := range append([]ShardID{NoShard}, new.Shards()...) {
			if from == to {
				continue
			}
			if moved := owned(old, oldOwned, from).Intersect(owned(new, newOwned, to)); !moved.Empty() {
				moves = append(moves, Move{Ranges: moved, From: from, To: to})
			}
		}
	}
	return moves
}
