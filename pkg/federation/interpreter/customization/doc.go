// Package customization is the live declarative layer of the interpreter chain: Layer answers with the scripts of
// the ResourceInterpreterCustomizations currently in the host, and Reconciler keeps it up to date as they change.
// A customization whose scripts do not compile, or that defines an operation another one already defines for the
// same kind, is refused with an Event saying why; its last good version, if any, keeps serving.
package customization
