// Package customization is the live declarative layer of the interpreter chain: Layer answers with the scripts of
// the ResourceInterpreterCustomizations currently in the host, and Reconciler keeps it up to date as they change.
// A customization whose scripts do not load, or that defines an operation another one already defines for the
// same kind, is refused with the reason in its status and an Event; its last accepted version, which its status
// keeps, serves instead, in every federator alike. Every shard writes the statuses and is reconciled by every write,
// so a shard compiles a new layer only when what serves changes, and writes a status only when it says something
// else than the shard's verdict (acceptance.Statuses).
package customization
