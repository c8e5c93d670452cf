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
		{"a namespaced write naming no namespace", own, req(request.RequestInfo{Verb: "create", APIGroup: "example.com", Resource: "widgets"}), true, false, 0},
		{"a namespaced write naming no namespace, on the cluster-scoped shard", other, req(request.RequestInfo{Verb: "delete", APIGroup: "example.com", Resource: "widgets", Name: "w"}), true, true, 0},
		{"a collection's delete naming no namespace", own, req(request.RequestInfo{Verb: "deletecollection", Resource: "configmaps"}), true, false, 0},
	} {
		owner, allowed := fence(tc.own, &tc.req, tc.namespaced)
		if allowed != tc.allowed || owner != tc.owner {
			t.Errorf("%s: allowed %v (owner %d), want %v (owner %d)", tc.name, allowed, owner, tc.allowed, tc.owner)
		}
	}
}

// Reviews are creates that store nothing: reads, whichever shard sends them. Other creates stay writes.
func TestWrites(t *testing.T) {
	for _, tc := range []struct {
		name   string
		req    Request
		writes bool
	}{
		{"a token review", req(request.RequestInfo{Verb: "create", APIGroup: "authentication.k8s.io", Resource: "tokenreviews"}), false},
		{"a self subject review", req(request.RequestInfo{Verb: "create", APIGroup: "authentication.k8s.io", Resource: "selfsubjectreviews"}), false},
		{"a subject access review", req(request.RequestInfo{Verb: "create", APIGroup: "authorization.k8s.io", Resource: "subjectaccessreviews"}), false},
		{"a self subject access review", req(request.RequestInfo{Verb: "create", APIGroup: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"}), false},
		{"a self subject rules review", req(request.RequestInfo{Verb: "create", APIGroup: "authorization.k8s.io", Resource: "selfsubjectrulesreviews"}), false},
		{"a local subject access review", req(request.RequestInfo{Verb: "create", APIGroup: "authorization.k8s.io", Resource: "localsubjectaccessreviews", Namespace: "team-a"}), false},
		{"a pod's binding, only ever created", req(request.RequestInfo{Verb: "create", Resource: "pods", Subresource: "binding", Namespace: "team-a"}), true},
		{"a binding", req(request.RequestInfo{Verb: "create", Resource: "bindings", Namespace: "team-a"}), true},
		{"a review resource of another group", req(request.RequestInfo{Verb: "create", APIGroup: "example.com", Resource: "tokenreviews"}), true},
		{"a configmap's create", req(request.RequestInfo{Verb: "create", Resource: "configmaps", Namespace: "team-a"}), true},
		{"an exec, a GET", req(request.RequestInfo{Verb: "get", Resource: "pods", Subresource: "exec", Namespace: "team-a"}), true},
		{"a get", req(request.RequestInfo{Verb: "get", Resource: "configmaps", Namespace: "team-a"}), false},
		{"an exec through a node", nodeProxy("get", "exec", "team-a", "web", "app"), true},
		{"a port-forward through a node", nodeProxy("get", "portForward", "team-a", "web"), true},
		{"a node's metrics", nodeProxy("get", "metrics", "cadvisor"), false},
		{"a node's log level changed", nodeProxy("update", "debug", "flags", "v"), true},
		{"a node's root", nodeProxy("get"), false},
	} {
		if got := writes(&tc.req); got != tc.writes {
			t.Errorf("%s: writes %v, want %v", tc.name, got, tc.writes)
		}
	}
}

// nodeProxy is a request through node-1's proxy to the kubelet path of parts.
func nodeProxy(verb string, parts ...string) Request {
	return req(request.RequestInfo{Verb: verb, Resource: "nodes", Name: "node-1", Subresource: "proxy",
		Parts: append([]string{"nodes", "node-1", "proxy"}, parts...)})
}
