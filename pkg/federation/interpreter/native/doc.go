// Package native is the Go interpreter of built-in Kubernetes kinds, the last link of the interpreter chain. It
// is pure: no clients, no clock; every operation is a function of the objects it is given.
//
// It reads objects through typed conversions (runtime.DefaultUnstructuredConverter) and changes them with
// unstructured edits on a copy, so fields newer than this module's k8s.io/api survive ReviseReplica, Retain and
// AggregateStatus.
package native
