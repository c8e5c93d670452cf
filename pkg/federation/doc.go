// Package federation is the home of fedmesh's federation controllers, one subpackage per stage of the
// pipeline a template goes through — detector, scheduler, binding, execution, status, and eviction after a
// failover — and the resource interpreter they all consult (interpreter). A namespace's whole pipeline lives in
// that namespace, and a cluster-scoped template's in the system namespace, so one shard of the federator owns
// everything about it.
package federation
