// Package fedrun runs fedmesh's own binaries against local clusters, the way a cluster would run them. A Mesh is
// the manager and the shard pods and proxies of any sharded operator (each pod an API object, each proxy a process
// configured by the manager over xDS); a Run is the federator, either one replica straight on the host API server
// or N shards on a Mesh, each with its own federator process whose traffic (host and members) all goes through
// its proxy. The e2e tests, the demo and the benchmarks share it.
package fedrun
