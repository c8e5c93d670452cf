package scheduler

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
)

// preferenceOrder sorts clusters by how much the scheduler prefers them: clusters of the previous result first
// (more replicas first), so a reschedule stays put; then more room first; then by name.
func preferenceOrder(clusters []Cluster, previous map[string]int32) {
	slices.SortStableFunc(clusters, func(a, b Cluster) int {
		pa, inA := previous[a.Name]
		pb, inB := previous[b.Name]
		if inA != inB {
			if inA {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(pb, pa); c != 0 {
			return c
		}
		if c := cmp.Compare(room(b), room(a)); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
}

// room is the cluster's available replicas, unlimited when unknown.
func room(c Cluster) int64 {
	if !c.AvailableKnown {
		return math.MaxInt32
	}
	return int64(c.Available)
}

// spread narrows clusters (in preference order) to what the spread constraints allow: for each constraint by a
// field or label, the preferred groups (at least minGroups, at most maxGroups); then, for a constraint by
// cluster, at least minGroups and at most maxGroups clusters.
func spread(clusters []Cluster, constraints []policyv1alpha1.SpreadConstraint, previous map[string]int32) ([]Cluster, error) {
	var byCluster, byGroup []policyv1alpha1.SpreadConstraint
	for _, sc := range constraints {
		key, label := groupKey(sc)
		if key == string(policyv1alpha1.SpreadByFieldCluster) {
			byCluster = append(byCluster, sc)
			continue
		}
		groups := groupClusters(clusters, key, label)
		orderGroups(groups, previous)
		if want := max(sc.MinGroups, 1); len(groups) < int(want) {
			return nil, fmt.Errorf("spread by %s needs at least %d groups, the fitting clusters are in %d", describe(sc), want, len(groups))
		}
		if sc.MaxGroups > 0 && len(groups) > int(sc.MaxGroups) {
			groups = groups[:sc.MaxGroups]
		}
		chosen := map[string]bool{}
		for _, g := range groups {
			for _, c := range g.clusters {
				chosen[c.Name] = true
			}
		}
		clusters = slices.DeleteFunc(clusters, func(c Cluster) bool { return !chosen[c.Name] })
		byGroup = append(byGroup, sc)
	}
	for _, sc := range byCluster {
		if want := max(sc.MinGroups, 1); len(clusters) < int(want) {
			return nil, fmt.Errorf("spread by cluster needs at least %d clusters, only %d fit", want, len(clusters))
		}
		if sc.MaxGroups > 0 && len(clusters) > int(sc.MaxGroups) {
			picked, err := pick(clusters, int(sc.MaxGroups), byGroup, previous)
			if err != nil {
				return nil, err
			}
			clusters = picked
		}
	}
	return clusters, nil
}

// pick keeps n of clusters (in preference order) such that every constraint by a field or label still finds its
// minGroups among them. Cutting the list at n alone could leave all n in one region of a constraint that wants two.
// Greedily, the next cluster taken is the one that brings the most groups still wanted (the more preferred on a
// tie); once none is wanted, the most preferred of the rest fill up to n.
func pick(clusters []Cluster, n int, byGroup []policyv1alpha1.SpreadConstraint, previous map[string]int32) ([]Cluster, error) {
	type need struct {
		groupOf map[string]string // cluster name -> its group under the constraint
		have    map[string]bool   // groups already among the chosen
		want    int
	}
	var needs []*need
	for _, sc := range byGroup {
		key, label := groupKey(sc)
		nd := &need{groupOf: map[string]string{}, have: map[string]bool{}, want: int(max(sc.MinGroups, 1))}
		for _, g := range groupClusters(clusters, key, label) {
			for _, c := range g.clusters {
				nd.groupOf[c.Name] = g.value
			}
		}
		needs = append(needs, nd)
	}
	gain := func(c Cluster) int {
		n := 0
		for _, nd := range needs {
			if g, ok := nd.groupOf[c.Name]; ok && len(nd.have) < nd.want && !nd.have[g] {
				n++
			}
		}
		return n
	}
	chosen := map[string]bool{}
	for {
		best, bestGain := -1, 0
		for i, c := range clusters {
			if g := gain(c); !chosen[c.Name] && g > bestGain {
				best, bestGain = i, g
			}
		}
		if best < 0 {
			break
		}
		c := clusters[best]
		chosen[c.Name] = true
		for _, nd := range needs {
			if g, ok := nd.groupOf[c.Name]; ok {
				nd.have[g] = true
			}
		}
	}
	if len(chosen) > n {
		return nil, fmt.Errorf("spread by cluster allows at most %d clusters, too few to cover the groups the other spread constraints need (%d found)", n, len(chosen))
	}
	for _, c := range clusters {
		if len(chosen) == n {
			break
		}
		chosen[c.Name] = true
	}
	return slices.DeleteFunc(slices.Clone(clusters), func(c Cluster) bool { return !chosen[c.Name] }), nil
}

// groupKey is what sc groups by: a field name, or a label when label is true.
func groupKey(sc policyv1alpha1.SpreadConstraint) (key string, label bool) {
	switch {
	case sc.SpreadByLabel != "":
		return sc.SpreadByLabel, true
	case sc.SpreadByField != "":
		return string(sc.SpreadByField), false
	}
	return string(policyv1alpha1.SpreadByFieldCluster), false
}

func describe(sc policyv1alpha1.SpreadConstraint) string {
	if key, label := groupKey(sc); label {
		return "label " + key
	} else {
		return key
	}
}

type group struct {
	value    string
	clusters []Cluster
}

// groupClusters groups clusters (keeping their order) by their value of key; clusters without one are left out.
// A cluster in several zones counts in its first.
func groupClusters(clusters []Cluster, key string, label bool) []*group {
	var groups []*group
	index := map[string]*group{}
	for _, c := range clusters {
		var value string
		if label {
			value = c.Labels[key]
		} else if values, ok := c.field(key); ok {
			value = values[0]
		}
		if value == "" {
			continue
		}
		g, ok := index[value]
		if !ok {
			g = &group{value: value}
			index[value] = g
			groups = append(groups, g)
		}
		g.clusters = append(g.clusters, c)
	}
	return groups
}

// orderGroups sorts groups by preference: more of the previous result's replicas first, then more room, more
// clusters, and by value.
func orderGroups(groups []*group, previous map[string]int32) {
	score := func(g *group) (prev, free int64) {
		for _, c := range g.clusters {
			if r, ok := previous[c.Name]; ok {
				prev += int64(r) + 1 // +1: a cluster with 0 replicas (a non-workload) still counts
			}
			free += room(c)
		}
		return prev, free
	}
	slices.SortStableFunc(groups, func(a, b *group) int {
		pa, fa := score(a)
		pb, fb := score(b)
		if c := cmp.Compare(pb, pa); c != 0 {
			return c
		}
		if c := cmp.Compare(fb, fa); c != 0 {
			return c
		}
		if c := cmp.Compare(len(b.clusters), len(a.clusters)); c != 0 {
			return c
		}
		return cmp.Compare(a.value, b.value)
	})
}
