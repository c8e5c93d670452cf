package xds

import (
	"context"
	"errors"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Delta xDS and REST fetches are refused: fedmesh serves state-of-the-world ADS only, which is what Client speaks,
// and REST carries no stream on which to authenticate a node.

var errNotServed = errors.New("xds: only state-of-the-world ADS is served")

// OnDeltaStreamOpen refuses delta streams.
func (c *Callbacks) OnDeltaStreamOpen(context.Context, int64, string) error {
	return status.Error(codes.Unimplemented, errNotServed.Error())
}

// OnDeltaStreamClosed does nothing.
func (c *Callbacks) OnDeltaStreamClosed(int64, *core.Node) {}

// OnStreamDeltaRequest refuses delta requests.
func (c *Callbacks) OnStreamDeltaRequest(int64, *discovery.DeltaDiscoveryRequest) error {
	return status.Error(codes.Unimplemented, errNotServed.Error())
}

// OnStreamDeltaResponse does nothing.
func (c *Callbacks) OnStreamDeltaResponse(int64, *discovery.DeltaDiscoveryRequest, *discovery.DeltaDiscoveryResponse) {
}

// OnFetchRequest refuses REST fetches, which carry no stream to authenticate.
func (c *Callbacks) OnFetchRequest(context.Context, *discovery.DiscoveryRequest) error {
	return status.Error(codes.Unimplemented, errNotServed.Error())
}

// OnFetchResponse does nothing.
func (c *Callbacks) OnFetchResponse(*discovery.DiscoveryRequest, *discovery.DiscoveryResponse) {}
