// Package status carries the state of applied objects back up the federation: from the member clusters into each
// Work's manifestStatuses (WorkReconciler, watching members through label-selected informers that start when a
// cluster's Works first need them), from the Works into their ResourceBinding's aggregatedStatus and FullyApplied
// condition (judged with the binding stage's outcome of rendering it, pkg/federation/rendering), and from there
// into the template's own status through the interpreter's AggregateStatus (BindingReconciler).
//
// A member whose Cluster is not Ready, or is gone, is never reported from a cache that may be stale: its entries
// keep their identity but lose their status, and their health is Unknown.
//
// A binding's status waits, up to a limit, until every target cluster has reported (hold.go): its members apply
// and observe its Works one after another, and each report would otherwise restate the binding and its template.
//
// A member object reaches the Work its labels name, and the Work they named before when a member tool removed or
// rewrote them (origin.go): its status still flows up, and its execution is told to apply them again.
//
// core.go is the pure part (readiness, the per-cluster items, comparisons); informers.go manages the member
// watches; work.go and binding.go are the controllers.
package status
