// Package canary is the pure core of a namespace-level canary upgrade: a canary version of the operator runs as its
// own shard, and a Plan moves namespaces to it in steps (named namespaces first, then growing shares of the hash
// space), analyses the canary's health after each step, and promotes it or rolls it back.
//
// Like etcd raft's core it does no I/O and keeps no clock. Step takes the Plan, the last State, an Observation of
// the canary since its step began, and the time, and returns the next State and a Result: the set of hashes the
// canary shard should own, whether to promote, the events to record and when to call again. The manager reads the
// inputs from the API, calls Step, and applies the Result: CanaryAssignment and shard.Diff give the handover.
//
// Contract for the manager:
//   - Observation.Owned is what the canary shard owns in the assignment that every proxy has acknowledged. A step's
//     pause (and its metrics window) starts only when Owned equals the State's Canary set.
//   - The metrics of an Observation count from State.StepStart; restart the counters when it changes. If they
//     could only start later (a manager restarted mid-step), say when in Observation.MeasuredSince: the step's
//     pause then runs from there.
//   - Actions are levels, not edges: Pause holds until the action is Continue again; Rollback and Promote stick.
//     Promote is approval: the steps and their analysis still run, and promotion follows the last step.
//   - On Promote the Result asks for the stable shards to be rolled to the canary's version (Result.Promote) while the
//     canary keeps its namespaces; once Observation.StableRolledOut is true, the canary's set becomes empty and its
//     namespaces return to their stable owners through the normal handover. Result.Finished says when the canary
//     owns nothing any more and may be removed.
//   - If the manager rolls the stable shards itself (spec.canary.promotion), Roll is that roll's core: given the
//     stable pods (shard, leader or not, version, readiness) it names the next batch to replace, shard by shard,
//     each shard's non-leaders before its leader, with a pause after each batch, and says when all are done.
//   - Promoted, RolledBack and Failed are final: to try again (e.g. a new canary version), start from a zero State.
package canary
