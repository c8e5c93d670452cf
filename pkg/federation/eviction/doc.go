// Package eviction finishes graceful evictions: a binding failed over from a cluster with purgeMode Gracefully
// keeps its copy there, through a gracefulEvictionTask the scheduler made, and this stage removes the task once the
// substitute is healthy or the task's grace period is over; the binding stage then deletes that cluster's Work. A
// task of purgeMode Directly (an application failover's cluster kept out of scheduling, or state carried from the
// cluster) ends the same way; its copy went already.
//
// Whether a task is done is a pure function of the binding and the time (Assess); the controller is a thin shell
// that writes what it decides and comes back at the next deadline.
package eviction
