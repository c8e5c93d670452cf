// Package binding is the binding controller: it turns each ResourceBinding into one Work per target cluster, in
// the binding's namespace. A Work holds the template as that cluster should get it (its share of the replicas,
// the override policies for that cluster applied) followed, when the binding propagates dependencies, by the
// ConfigMaps, Secrets, ServiceAccounts and claims the template refers to; one of those appearing or changing
// renders the bindings that looked it up again (dependents.go). It deletes the Works of clusters no longer
// targeted, and of a binding being deleted; a Work being deleted is no cluster's Work, and a cluster targeted
// again gets a new one once it is gone. It hands what it found (a template missing, overrides or dependencies
// failing, the Works' generations) to the binding-status stage, which judges from it and the Works' status the
// binding's FullyApplied condition (pkg/federation/rendering). For a binding with rolloutScope Federation it
// renders every Work first, then gives each cluster its turn in the Deployment's rollout (pace.go, package rollout)
// before it writes them.
//
// render.go and status.go are the pure core (what the Works should be, what is handed over); controller.go reads
// and writes the API.
package binding
