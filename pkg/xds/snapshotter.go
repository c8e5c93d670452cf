package xds

import (
	"context"
	"fmt"
	"sync"

	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"
)

// SnapshotterOptions configures a Snapshotter.
type SnapshotterOptions struct {
	// TypeURLs served; default TypeURLs.
	TypeURLs []string
	// VersionPrefix prefixes the caches' version_info (go-control-plane's WithVersionPrefix). Give each manager
	// process its own (its pod UID and start time, say), so that a proxy reconnecting to a new leader never presents a
	// version the new caches also use for different content.
	VersionPrefix string
}

// Snapshotter is the manager's state of what every node group should have: one go-control-plane LinearCache per
// type URL, combined by a MuxCache that the xDS server watches. The manager calls Set and Delete; the caches notify
// the open streams. It is safe for concurrent use.
type Snapshotter struct {
	mu     sync.Mutex
	linear map[string]*cache.LinearCache
	mux    *cache.MuxCache
	docs   map[ResourceKey]Document
}

// ResourceKey names one resource: its type URL and name.
type ResourceKey struct {
	TypeURL string
	Name    string
}

// NewSnapshotter returns an empty Snapshotter.
func NewSnapshotter(opts SnapshotterOptions) *Snapshotter {
	if len(opts.TypeURLs) == 0 {
		opts.TypeURLs = TypeURLs
	}
	s := &Snapshotter{linear: map[string]*cache.LinearCache{}, docs: map[ResourceKey]Document{}}
	s.mux = &cache.MuxCache{
		Classify:      func(r *cache.Request) string { return r.GetTypeUrl() },
		ClassifyDelta: func(r *cache.DeltaRequest) string { return r.GetTypeUrl() },
		Caches:        map[string]cache.Cache{},
	}
	for _, t := range opts.TypeURLs {
		lc := cache.NewLinearCache(t, cache.WithVersionPrefix(opts.VersionPrefix))
		s.linear[t] = lc
		s.mux.Caches[t] = lc
	}
	return s
}

// Cache is what the xDS server serves from.
func (s *Snapshotter) Cache() cache.Cache { return s.mux }

// Set publishes version `version` of document doc as resource name of type typeURL. Setting the document that is
// already there (same version and bytes) is a no-op, so nothing is resent.
func (s *Snapshotter) Set(typeURL, name string, doc []byte, version string) error {
	lc, err := s.cache(typeURL)
	if err != nil {
		return err
	}
	if name == "" || version == "" {
		return fmt.Errorf("xds: resource name and version are required (name %q, version %q)", name, version)
	}
	d := Document{Version: version, Data: append([]byte(nil), doc...)}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := ResourceKey{typeURL, name}
	if old, ok := s.docs[k]; ok && old.Equal(d) {
		return nil
	}
	if err := lc.UpdateResource(name, Encode(name, version, d.Data)); err != nil {
		return fmt.Errorf("xds: set %s %q: %w", typeURL, name, err)
	}
	s.docs[k] = d
	return nil
}

// Delete removes a resource, when its node group is gone. A state-of-the-world stream cannot tell a proxy that a
// resource of a custom type was deleted, so its proxies keep the last version: to take something away from a live
// group (a revoke), Set a document that grants nothing instead.
func (s *Snapshotter) Delete(typeURL, name string) error {
	lc, err := s.cache(typeURL)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := ResourceKey{typeURL, name}
	if _, ok := s.docs[k]; !ok {
		return nil
	}
	delete(s.docs, k)
	if err := lc.DeleteResource(name); err != nil {
		return fmt.Errorf("xds: delete %s %q: %w", typeURL, name, err)
	}
	return nil
}

// Get returns the document currently published as a resource.
func (s *Snapshotter) Get(typeURL, name string) (Document, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.docs[ResourceKey{typeURL, name}]
	return d, ok
}

func (s *Snapshotter) cache(typeURL string) (*cache.LinearCache, error) {
	lc, ok := s.linear[typeURL]
	if !ok {
		return nil, fmt.Errorf("xds: type URL %q is not served", typeURL)
	}
	return lc, nil
}

// RegisterADS registers go-control-plane's ADS server, serving s with cb (normally a *Callbacks), on g. ctx bounds
// the server's life: when it ends, open streams end. Only state-of-the-world ADS is usable; Callbacks refuses delta
// and REST.
func RegisterADS(ctx context.Context, g grpc.ServiceRegistrar, s *Snapshotter, cb server.Callbacks) {
	discoverygrpc.RegisterAggregatedDiscoveryServiceServer(g, server.NewServer(ctx, s.Cache(), cb))
}
