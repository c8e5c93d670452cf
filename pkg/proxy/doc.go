// Package proxy is the HTTP plumbing of fedmesh's sidecar: it forwards an operator's API traffic to the real API
// server with the caller's own credentials, verifying the upstream's certificate. Ownership decisions (which
// namespaces this shard sees and may write) come from pkg/shard; this package only applies them to requests.
package proxy
