// Package verdicts carries a condition one federation stage decides to the stage that writes the rest of the
// object's status, so that both go in one write: the execution stage's Applied condition of a Work goes with the
// member objects' status (the work-status stage). The two changes come within moments; written by each stage on
// its own, every change cost the host two status writes of a large object, and woke every watcher of the kind
// (in every shard's cache) twice. (A binding's FullyApplied is judged by the stage that writes it, from what
// the binding stage found: pkg/federation/rendering.) The verdicts live in memory only: one lost with its
// process is decided again, as its stage looks at every object when it starts.
package verdicts
