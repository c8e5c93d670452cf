package shard_test

import (
	"fmt"

	"github.com/fedmesh/fedmesh/pkg/shard"
)

// Three shards split the space; shard 0 asks the API server only for its third. Then a fourth shard joins, and the
// handover moves a quarter of the space instead of all of it.
func Example() {
	three := shard.Assignment{}
	for i, s := range shard.Split(3) {
		three[shard.ShardID(i)] = s
	}
	selector, _ := shard.ShardSelector(three[0])
	fmt.Println(selector)

	four := shard.Rebalance(three, []shard.ShardID{0, 1, 2, 3})
	for _, move := range shard.Diff(three, four) {
		fmt.Println(move)
	}
	// Output:
	// shardRange(object.metadata.namespace, '0x0000000000000000', '0x5555555555555556')
	// shard 0 -> shard 3: {[0x4000000000000000,0x5555555555555556)}
	// shard 1 -> shard 3: {[0x9555555555555556,0xaaaaaaaaaaaaaaab)}
	// shard 2 -> shard 3: {[0xeaaaaaaaaaaaaaab,0x10000000000000000)}
}

// A canary shard takes one namespace as a one-point range; the shard that had it now selects around the hole.
func ExampleCarve() {
	two := shard.Assignment{0: shard.Split(2)[0], 1: shard.Split(2)[1]}
	const canary shard.ShardID = 9
	carved := shard.Carve(two, "shop", canary)

	owner, _ := carved.NamespaceOwner("shop")
	fmt.Println("shop is owned by shard", owner)
	fmt.Println(carved[canary])
	for _, id := range carved.Shards() {
		selector, _ := shard.ShardSelector(carved[id])
		fmt.Printf("shard %d: %s\n", id, selector)
	}
	// Output:
	// shop is owned by shard 9
	// {[0x46dc5e18e28e2409,0x46dc5e18e28e240a)}
	// shard 0: shardRange(object.metadata.namespace, '0x0000000000000000', '0x46dc5e18e28e2409') || shardRange(object.metadata.namespace, '0x46dc5e18e28e240a', '0x8000000000000000')
	// shard 1: shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')
	// shard 9: shardRange(object.metadata.namespace, '0x46dc5e18e28e2409', '0x46dc5e18e28e240a')
}

// In label mode the proxy asks for the hash buckets a shard touches and filters the rest itself when the
// requirement is not exact.
func ExampleLabelRequirement() {
	for _, owned := range []shard.Set{shard.Split(64)[5], shard.Point(shard.NamespaceHash("shop"))} {
		req, exact, _ := shard.LabelRequirement(owned)
		merged, _ := shard.MergeLabelSelector("app=web", req)
		fmt.Printf("%s (exact: %v)\n", merged, exact)
	}
	// Output:
	// app=web,mesh.fedmesh.io/hash-bucket in (14,15,16,17) (exact: true)
	// app=web,mesh.fedmesh.io/hash-bucket in (46) (exact: false)
}
