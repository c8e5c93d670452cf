package xds

import (
	"bytes"
	"fmt"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Type URLs of fedmesh's custom xDS resources. They name what a payload means; the message on the wire is the same
// for both (see Encode).
const (
	// OwnershipType carries a proxy's ownership: the hash ranges its shard owns, with their epoch.
	OwnershipType = "type.googleapis.com/fedmesh.io.ProxyOwnership"
	// TrafficPolicyType carries a proxy's traffic policy (rate limits, breakers, deny rules, faults).
	TrafficPolicyType = "type.googleapis.com/fedmesh.io.TrafficPolicy"
)

// TypeURLs lists every type URL fedmesh serves, in the order a client subscribes to them.
var TypeURLs = []string{OwnershipType, TrafficPolicyType}

// Document is one configuration payload: an opaque JSON document and the version its author gave it.
type Document struct {
	Version string
	Data    []byte
}

// Equal reports whether two documents have the same version and bytes.
func (d Document) Equal(o Document) bool {
	return d.Version == o.Version && bytes.Equal(d.Data, o.Data)
}

// Encode wraps a document as the resource the cache serves under a fedmesh type URL.
//
// The message is xDS's own per-resource envelope, envoy.service.discovery.v3.Resource, with Name and Version set and
// Resource holding a google.protobuf.BytesValue of the JSON document. An envelope is needed because a state-of-the-
// world response carries each resource as a bare Any: without it the client could not tell which resource a payload
// is, nor the server which document version a node ACKed (the response's version_info is the cache's own counter,
// not the document's version). Both are well-known messages, so fedmesh needs no generated code of its own.
func Encode(name, version string, doc []byte) types.Resource {
	inner, _ := anypb.New(wrapperspb.Bytes(doc)) // marshaling a BytesValue cannot fail
	return &discovery.Resource{Name: name, Version: version, Resource: inner}
}

// Decode reads back a resource of type typeURL from a response: its name and document. It fails if the Any is of
// another type or does not hold an Encode envelope.
func Decode(typeURL string, a *anypb.Any) (string, Document, error) {
	if a.GetTypeUrl() != typeURL {
		return "", Document{}, fmt.Errorf("resource has type %q, want %q", a.GetTypeUrl(), typeURL)
	}
	var env discovery.Resource
	if err := proto.Unmarshal(a.GetValue(), &env); err != nil {
		return "", Document{}, fmt.Errorf("decoding %s resource: %w", typeURL, err)
	}
	if env.GetName() == "" {
		return "", Document{}, fmt.Errorf("%s resource has no name", typeURL)
	}
	var doc wrapperspb.BytesValue
	if err := env.GetResource().UnmarshalTo(&doc); err != nil {
		return "", Document{}, fmt.Errorf("%s resource %q: payload: %w", typeURL, env.GetName(), err)
	}
	return env.GetName(), Document{Version: env.GetVersion(), Data: doc.GetValue()}, nil
}

// heldDetails says, in a NACK's error_detail, which document versions the node keeps serving: one Resource
// envelope per document, with its name and version and no payload. A server that never saw the node ACK them (it
// restarted, or took over from another) learns from it what the node enforces, for instance an ownership epoch
// newer than the one it offers.
func heldDetails(held map[string]string) []*anypb.Any {
	var out []*anypb.Any
	for name, version := range held {
		a, err := anypb.New(&discovery.Resource{Name: name, Version: version})
		if err == nil {
			out = append(out, a)
		}
	}
	return out
}

// heldVersions reads heldDetails back: the version of each document the node keeps serving, by name. Details of
// other types are skipped.
func heldVersions(details []*anypb.Any) map[string]string {
	out := map[string]string{}
	for _, a := range details {
		var env discovery.Resource
		if a.MessageIs(&env) && a.UnmarshalTo(&env) == nil && env.GetName() != "" {
			out[env.GetName()] = env.GetVersion()
		}
	}
	return out
}
