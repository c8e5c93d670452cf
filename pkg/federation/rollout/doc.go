// Package rollout paces a Deployment's rolling update across the member clusters it is divided over, for bindings
// whose policy asks for rolloutScope Federation: together the clusters keep to the template's maxUnavailable and
// maxSurge, resolved against all its replicas, as one Deployment in one cluster would. Clusters whose pods are out
// of date take turns: each cluster rolling gets part of the budget (at least one pod's worth, so it can move), and
// a cluster waiting for its turn gets the new template paused (spec.paused), which its Deployment controller
// records without replacing a pod.
//
// It is pure: the binding stage (package binding) hands it each cluster's Work as it is, the workload as just
// rendered and the template's generation, and writes what it returns.
package rollout
