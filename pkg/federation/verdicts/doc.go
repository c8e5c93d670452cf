// Package verdicts carries the execution stage's verdict on each Work, its Applied condition, to the work-status
// stage, which writes it in the same status apply as the member objects' status. A Work is applied and then its
// objects are observed within moments of each other; written by each stage on its own, every Work change cost the
// host two status writes, and woke every watcher of Works (binding and status stages, in every shard's cache)
// twice. The verdicts live in memory only: a verdict lost with its process is found again, since a Work whose
// status does not show it applied at its generation is applied again.
package verdicts
