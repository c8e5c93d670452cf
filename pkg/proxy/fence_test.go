package proxy

import (
	"testing"

	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/pkg/shard"
)

func req(info request.RequestInfo) Request { return Request{RequestInfo: info} }

func TestFence(t *testing.T) {
	ns := "team-a"
	h := shard.NamespaceHash(ns)
	mine := shard.NewSet(shard.Range{First: h, Last: h})
	own := &config.Ownership{Shard: 1, Assignment: shard.Assignment{0: mine.Complement(), 1: mine}}
	other := &config.Ownership{Shard: 0, Assignment: own.Assignment}
	for _, tc := range []struct {
		name       string
		own        *config.Ownership
		req        Request
		namespaced bool
		allowed    bool
		owner      shard.ShardID
	}{
		{"a write in an owned namespace", own, req(request.RequestInfo{Verb: "patch", Resource: "configmaps", Namespace: ns}), true, true, 1},
		{"a write in another shard's namespace", other, req(request.RequestInfo{Verb: "patch", Resource: "configmaps", Namespace: ns}), true, false, 1},
		{"no configuration owns nothing", nil, req(request.RequestInfo{Verb: "create", Resource: "configmaps", Namespace: ns}), true, false, shard.NoShard},
		{"an event in another shard's namespace", other, req(request.RequestInfo{Verb: "create", Resource: "events", Namespace: ns}), true, true, 0},
		{"a new-style event, counted again", other, req(request.RequestInfo{Verb: "patch", APIGroup: "events.k8s.io", Resource: "events", Namespace: ns}), true, true, 0},
		{"deleting another shard's events", other, req(request.RequestInfo{Verb: "delete", Resource: "events", Namespace: ns}), true, false, 1},
		{"an event without a configuration", nil, req(request.RequestInfo{Verb: "create", Resource: "events", Namespace: ns}), true, false, shard.NoShard},
		{"another group's events", other, req(request.RequestInfo{Verb: "create", APIGroup: "example.com", Resource: "events", Namespace: ns}), true, false, 1},
	} {
		owner, allowed := fence(tc.own, &tc.req, tc.namespaced)
		if allowed != tc.allowed || owner != tc.owner {
			t.Errorf("%s: allowed %v (owner %d), want %v (owner %d)", tc.name, allowed, owner, tc.allowed, tc.owner)
		}
	}
}
