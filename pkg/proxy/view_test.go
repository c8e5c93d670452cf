package proxy

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/request"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/pkg/shard"
)

// A watch survives an ownership change only if the change leaves what it shows as it was.
func TestViewChanges(t *testing.T) {
	ns := "team-a"
	h := shard.NamespaceHash(ns)
	teamA := shard.NewSet(shard.Range{First: h, Last: h})
	// base owns team-a (and all but the other half); moved hands another part of the space over but keeps team-a.
	half := shard.NewSet(shard.Range{First: 0, Last: 1<<63 - 1}).Union(teamA)
	base := &config.Ownership{Shard: 0, ClusterScoped: config.ClusterScopedDesignated, ClusterScopedShard: 0,
		FilterMode: meshv1alpha1.FilterModeServer, Assignment: shard.Assignment{0: half, 1: half.Complement()}}
	with := func(change func(o *config.Ownership)) *config.Ownership {
		o := *base
		o.Assignment = shard.Assignment{0: half, 1: half.Complement()}
		change(&o)
		return &o
	}
	rest := half.Difference(teamA)
	moved := with(func(o *config.Ownership) {
		// Half of what base owns besides team-a goes to shard 1.
		lower := shard.NewSet(shard.Range{First: 0, Last: 1<<62 - 1}).Intersect(rest)
		o.Assignment = shard.Assignment{0: half.Difference(lower), 1: half.Complement().Union(lower)}
	})
	lostTeamA := with(func(o *config.Ownership) {
		o.Assignment = shard.Assignment{0: half.Difference(teamA), 1: half.Complement().Union(teamA)}
	})
	lostClusterScoped := with(func(o *config.Ownership) { o.ClusterScopedShard = 1 })
	podsOnly := with(func(o *config.Ownership) { o.Resources = []schema.GroupResource{{Resource: "pods"}} })
	labelMode := with(func(o *config.Ownership) { o.FilterMode = meshv1alpha1.FilterModeLabel })

	pods := req(request.RequestInfo{Verb: "watch", Resource: "pods"})
	podsInTeamA := req(request.RequestInfo{Verb: "watch", Resource: "pods", Namespace: ns})
	configMaps := req(request.RequestInfo{Verb: "watch", Resource: "configmaps"})
	configMapsInTeamA := req(request.RequestInfo{Verb: "watch", Resource: "configmaps", Namespace: ns})
	podsOnlyLostTeamA := with(func(o *config.Ownership) {
		o.Assignment = lostTeamA.Assignment
		o.Resources = podsOnly.Resources
	})
	nodes := req(request.RequestInfo{Verb: "watch", Resource: "nodes"})
	for _, tc := range []struct {
		name       string
		req        Request
		namespaced bool
		from, to   *config.Ownership
		unchanged  bool
	}{
		{"the same ownership", pods, true, base, with(func(*config.Ownership) {}), true},
		{"ranges moved: a watch across namespaces", pods, true, base, moved, false},
		{"ranges moved: a watch of a namespace kept", podsInTeamA, true, base, moved, true},
		{"the namespace moved away", podsInTeamA, true, base, lostTeamA, false},
		{"the namespace moved in", podsInTeamA, true, lostTeamA, base, false},
		{"cluster-scoped objects lost", nodes, false, base, lostClusterScoped, false},
		{"cluster-scoped objects gained", nodes, false, lostClusterScoped, base, false},
		{"ranges moved: cluster-scoped objects", nodes, false, base, moved, true},
		{"a resource no longer sharded", configMaps, true, base, podsOnly, false},
		{"ranges moved: a resource not sharded", configMaps, true, podsOnly, with(func(o *config.Ownership) {
			*o = *moved
			o.Resources = []schema.GroupResource{{Resource: "pods"}}
		}), true},
		{"the namespace moved away: a resource not sharded", configMapsInTeamA, true, podsOnly, podsOnlyLostTeamA, true},
		{"the namespace moved away: a resource no longer sharded", configMapsInTeamA, true, lostTeamA, podsOnlyLostTeamA, false},
		{"the filter mode changed", pods, true, base, labelMode, false},
		{"the lease lapsed", podsInTeamA, true, base, nil, false},
		{"the lease lapsed: nothing shown stays nothing", nodes, false, lostClusterScoped, nil, true},
		{"the first ownership", pods, true, nil, base, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := viewOf(tc.from, &tc.req, tc.namespaced).same(viewOf(tc.to, &tc.req, tc.namespaced))
			if got != tc.unchanged {
				t.Errorf("unchanged = %v, want %v", got, tc.unchanged)
			}
		})
	}
}

// What a list or watch shows: a resource not sharded is shown whole, in a namespace of another shard too.
func TestViewOf(t *testing.T) {
	ns := "team-a"
	h := shard.NamespaceHash(ns)
	teamA := shard.NewSet(shard.Range{First: h, Last: h})
	own := &config.Ownership{Shard: 1, ClusterScopedShard: 0, Assignment: shard.Assignment{0: teamA.Complement(), 1: teamA},
		Resources: []schema.GroupResource{{Resource: "secrets"}}}
	for _, tc := range []struct {
		name       string
		own        *config.Ownership
		req        Request
		namespaced bool
		shows      showing
	}{
		{"a sharded resource across namespaces", own, req(request.RequestInfo{Verb: "list", Resource: "secrets"}), true, showsOwned},
		{"a sharded resource in an owned namespace", own, req(request.RequestInfo{Verb: "list", Resource: "secrets", Namespace: ns}), true, showsAll},
		{"a sharded resource in another shard's namespace", own, req(request.RequestInfo{Verb: "list", Resource: "secrets", Namespace: "other"}), true, showsNothing},
		{"a resource not sharded across namespaces", own, req(request.RequestInfo{Verb: "list", Resource: "configmaps"}), true, showsAll},
		{"a resource not sharded in another shard's namespace", own, req(request.RequestInfo{Verb: "watch", Resource: "configmaps", Namespace: "other"}), true, showsAll},
		{"a resource not sharded without an ownership", nil, req(request.RequestInfo{Verb: "list", Resource: "configmaps", Namespace: "other"}), true, showsNothing},
		{"cluster-scoped objects of another shard", own, req(request.RequestInfo{Verb: "list", Resource: "nodes"}), false, showsNothing},
	} {
		if got := viewOf(tc.own, &tc.req, tc.namespaced).shows; got != tc.shows {
			t.Errorf("%s: shows %d, want %d", tc.name, got, tc.shows)
		}
	}
}
