// Package applystatus writes the part of an object's status that one federation stage owns with server-side
// apply. Stages share a status (the scheduler and the status stage both write a ResourceBinding's): applied under
// its own field manager, each stage's write merges with the others' on the API server, so it neither reads
// before it writes nor fails on a conflict with another stage's write. A condition another stage decides without
// owning the status reaches it through pkg/federation/verdicts (or, for a binding, pkg/federation/rendering).
package applystatus
