// Package fedrun runs fedmesh's own binaries against a local federation, the way a cluster would run them: the
// manager, and the federator either as one replica straight on the host API server or as N shards, each a pod
// object with its own proxy process in front of all its traffic (host and members) and its own federator process.
// The e2e tests and the demo share it.
package fedrun
