package scheduler

import (
	"cmp"
	"fmt"
	"maps"
	"math/big"
	"slices"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
)

// share is one cluster's claim in an apportionment.
type share struct {
	name   string
	weight int64
	// previous is what the cluster had; among equal remainders the one that had more gets the extra replica, so a
	// recomputation lands where the last one did.
	previous int32
}

// apportion divides total among shares in proportion to their weights: each gets the floor of its exact share,
// and the replicas left over go one each to the largest remainders (ties: more previously, heavier, name). The
// result is exact (it sums to total) and deterministic. It needs a positive total weight. The arithmetic is in
// big integers: weights are int64, and total times a weight, or their sum, may not fit one.
func apportion(total int32, shares []share) map[string]int32 {
	sum := new(big.Int)
	for _, s := range shares {
		sum.Add(sum, big.NewInt(s.weight))
	}
	out := make(map[string]int32, len(shares))
	type rest struct {
		share
		remainder *big.Int
	}
	rests := make([]rest, 0, len(shares))
	left := int64(total)
	for _, s := range shares {
		exact := new(big.Int).Mul(big.NewInt(int64(total)), big.NewInt(s.weight))
		floor, remainder := new(big.Int).QuoRem(exact, sum, new(big.Int))
		out[s.name] = int32(floor.Int64()) // at most total
		left -= floor.Int64()
		rests = append(rests, rest{s, remainder})
	}
	slices.SortFunc(rests, func(a, b rest) int {
		if c := b.remainder.Cmp(a.remainder); c != 0 {
			return c
		}
		if c := cmp.Compare(b.previous, a.previous); c != 0 {
			return c
		}
		if c := cmp.Compare(b.weight, a.weight); c != 0 {
			return c
		}
		return cmp.Compare(a.name, b.name)
	})
	for i := 0; left > 0; i, left = i+1, left-1 {
		out[rests[i%len(rests)].name]++
	}
	return out
}

// Apportion divides total among the named weights as the scheduler divides replicas among clusters (see
// apportion); the weights must not all be 0.
func Apportion(total int32, weights map[string]int64) map[string]int32 {
	shares := make([]share, 0, len(weights))
	for name, w := range weights {
		shares = append(shares, share{name: name, weight: w})
	}
	return apportion(total, shares)
}

// staticWeights weighs each cluster by the heaviest entry of list that selects it; clusters no entry selects get
// no weight, and no replicas (unless no cluster has one: see divide).
func staticWeights(clusters []Cluster, list []policyv1alpha1.StaticClusterWeight, previous map[string]int32) []share {
	var shares []share
	for _, c := range clusters {
		var w int64
		for _, e := range list {
			if matchAffinity(&e.TargetCluster, &c) == "" {
				w = max(w, e.Weight)
			}
		}
		if w > 0 {
			shares = append(shares, share{name: c.Name, weight: w, previous: previous[c.Name]})
		}
	}
	return shares
}

// equalWeights weighs every cluster 1.
func equalWeights(clusters []Cluster, previous map[string]int32) []share {
	shares := make([]share, len(clusters))
	for i, c := range clusters {
		shares[i] = share{name: c.Name, weight: 1, previous: previous[c.Name]}
	}
	return shares
}

// weighted apportions replicas among clusters by the weights weigh gives them (never none). A closed cluster that
// this gives more than it had keeps what it had, and the rest is apportioned again among the others, until none
// is given more.
func weighted(clusters []Cluster, closed map[string]string, replicas int32, previous map[string]int32,
	weigh func([]Cluster) []share) (map[string]int32, error) {
	out := map[string]int32{}
	for {
		if len(clusters) == 0 {
			return nil, fmt.Errorf("no cluster takes the %d new replicas", replicas)
		}
		got := apportion(replicas, weigh(clusters))
		var rest []Cluster
		for _, c := range clusters {
			if _, shut := closed[c.Name]; shut && got[c.Name] > previous[c.Name] {
				out[c.Name] = previous[c.Name]
				replicas -= previous[c.Name]
				continue
			}
			rest = append(rest, c)
		}
		if len(rest) == len(clusters) {
			maps.Copy(out, got)
			return out, nil
		}
		clusters = rest
	}
}

// open is clusters less the closed ones.
func open(clusters []Cluster, closed map[string]string) []Cluster {
	return slices.DeleteFunc(slices.Clone(clusters), func(c Cluster) bool {
		_, shut := closed[c.Name]
		return shut
	})
}

// kept is the previous result restricted to clusters, and its total.
func kept(clusters []Cluster, previous map[string]int32) (map[string]int32, int32) {
	out := map[string]int32{}
	var sum int32
	for _, c := range clusters {
		if r := previous[c.Name]; r > 0 {
			out[c.Name] = r
			sum += r
		}
	}
	return out, sum
}

// dynamic divides replicas by the clusters' room, moving as little as it can: replicas that stay on their
// clusters stay; new ones (a scale-up, or those of clusters that left) go out to the clusters not closed in
// proportion to each one's room; a scale-down takes from every cluster in proportion to what it has. A cluster
// whose room is unknown weighs as room for all replicas, as Karmada counts it: that is at least the new ones, so
// no cluster of known room gets more than it has room for, and one known to be full gets nothing.
func dynamic(clusters []Cluster, closed map[string]string, replicas int32, previous map[string]int32) (map[string]int32, error) {
	have, sum := kept(clusters, previous)
	if replicas <= sum {
		return scaleDown(have, sum-replicas), nil
	}
	extra := replicas - sum
	var shares []share
	var free int64
	unknown := false
	for _, c := range open(clusters, closed) {
		weight := int64(c.Available)
		if !c.AvailableKnown {
			weight, unknown = int64(replicas), true
		}
		if weight > 0 {
			shares = append(shares, share{name: c.Name, weight: weight, previous: have[c.Name]})
			free += weight
		}
	}
	if !unknown && free < int64(extra) {
		return nil, fmt.Errorf("the clusters have room for %d more replicas, %d are needed", free, extra)
	}
	return add(have, apportion(extra, shares)), nil
}

// scaleDown takes excess replicas from have in proportion to what each cluster has.
func scaleDown(have map[string]int32, excess int32) map[string]int32 {
	if excess == 0 {
		return have
	}
	var shares []share
	for name, r := range have {
		shares = append(shares, share{name: name, weight: int64(r), previous: -r})
	}
	take := apportion(excess, shares)
	out := map[string]int32{}
	for name, r := range have {
		out[name] = r - take[name]
	}
	return out
}

// aggregated packs replicas into as few clusters as have room for them, moving as little as it can: a scale-up
// fills the clusters that have replicas first, then the roomiest others, none of them closed; a scale-down empties
// the clusters with the fewest replicas first. clusters are in preference order.
func aggregated(clusters []Cluster, closed map[string]string, replicas int32, previous map[string]int32) (map[string]int32, error) {
	have, sum := kept(clusters, previous)
	out := map[string]int32{}
	for name, r := range have {
		out[name] = r
	}
	if replicas < sum {
		names := make([]string, 0, len(have))
		for name := range have {
			names = append(names, name)
		}
		slices.SortFunc(names, func(a, b string) int {
			if c := cmp.Compare(have[a], have[b]); c != 0 {
				return c
			}
			return cmp.Compare(b, a)
		})
		excess := sum - replicas
		for _, name := range names {
			take := min(excess, out[name])
			out[name] -= take
			excess -= take
		}
		return out, nil
	}
	left := int64(replicas - sum)
	for _, c := range open(clusters, closed) {
		if left == 0 {
			break
		}
		give := min(left, room(c))
		out[c.Name] += int32(give)
		left -= give
	}
	if left > 0 {
		return nil, fmt.Errorf("the clusters have room for %d more replicas, %d are needed", int64(replicas-sum)-left, replicas-sum)
	}
	return out, nil
}

func add(a, b map[string]int32) map[string]int32 {
	out := map[string]int32{}
	for k, v := range a {
		out[k] += v
	}
	for k, v := range b {
		out[k] += v
	}
	return out
}
