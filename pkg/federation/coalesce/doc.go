// Package coalesce gathers a burst of events about one object into one reconcile. The federation's later stages
// are driven by the changes of the objects below them (a binding by its Works, a Work by its member objects), which
// come in quick succession: a Work is rendered, applied, then observed; a member rolling out a workload changes its
// status once per pod. Each reconcile of theirs is a write to the host, so a short delay that gathers those
// changes saves the host most of those writes, at the price of that delay in how fresh a status is.
package coalesce
