// Package xds carries fedmesh configuration from the manager to the proxies over ADS (the aggregated xDS stream),
// with envoyproxy/go-control-plane on the server side and a small client of its own on the proxy side.
//
// Payloads are opaque here: a Document is a JSON document with a version; the proxy decodes and validates it and says
// yes (ACK) or no (NACK with the reason). Two custom type URLs carry them, OwnershipType and TrafficPolicyType.
//
// Naming: one resource per type per node group, a shard of a ShardingConfig, named by ResourceName as
// "<namespace>/<shardingconfig>/shard-<n>". A proxy names its group in its node metadata (NodeMetadata) and may
// subscribe to that name only; the server refuses wildcard subscriptions and other groups' names.
//
// Server side (state, not transport, in go-control-plane's style): a Snapshotter holds one LinearCache per type URL
// behind a MuxCache, and the manager only calls Set and Delete on it; Callbacks authenticate each stream (the
// proxy's service-account token, checked by an Authenticator the manager supplies) and record per node the version
// it ACKed or the NACK and its reason, which a handover waits on. A node is its pod and, where the token names it
// (SetPodUID), its pod's UID: two processes of one pod name acknowledge apart (NodeKey). RegisterADS wires both into go-control-plane's
// server on a gRPC server. Client is the proxy's half: it dials, authenticates, subscribes, calls Apply for each
// response, ACKs or NACKs, and reconnects with a bounded, jittered backoff, or after about a second when a manager
// replica that is not the leader refused it (NotLeader) while its ContactLease since the last served stream lasts.
package xds
