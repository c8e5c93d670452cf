// Package verdicts carries a condition one federation stage decides to the stage that writes the rest of the
// object's status, so that both go in one write: the execution stage's Applied condition of a Work goes with the
// member objects' status (the work-status stage), the binding stage's FullyApplied condition of a
// ResourceBinding with its aggregatedStatus (the binding-status stage). Each pair of changes comes within moments;
// written by each stage on its own, every change cost the host two status writes of a large object, and woke
// every watcher of the kind (in every shard's cache) twice. The verdicts live in memory only: one lost with its
// process is decided again, as its stage looks at every object when it starts.
package verdicts
