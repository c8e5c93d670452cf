// Package execution applies Works to their member clusters: each manifest is server-side applied with fedmesh's
// field manager, so the fields a member owns (an HPA's replicas, labels added there, status) stay the member's and
// the fields the federation sets win. An object that already exists in the member and was not applied by fedmesh
// is left alone or taken over as the binding's conflictResolution says; taking over changes no pod template, so
// the pods keep running. Deleting a Work deletes its objects from the member unless the Work preserves them, and
// a manifest dropped from a Work is deleted from the member too. An object deleted in the member is applied again
// once the work-status stage no longer finds it there, unless it had finished (a Job, finished.go): that one was
// cleaned up there, and is not run again until its template's spec changes. A member edit of the object (not of
// its status), which the work-status stage's member watches hand over (edits.go), is applied over. An apply
// carrying values Retain copied from the member is conditional on the object being as read, so a member write
// between the read and the apply (an HPA scaling) is not reverted: it is read and applied again.
//
// A reconcile that finds a member object already as its manifest says, for a Work applied in full at its current
// generation, reads it and writes nothing (skip.go): a restarted federator, or a cluster turning Ready again,
// requeues every Work, and re-applying them all would be a member write per object for nothing.
//
// A Work of a cluster that is not Ready is neither applied nor cleaned up there (notready.go): a member that froze
// would hold a worker for each of its Works until the member timeout, and the Works of healthy members would wait.
// It says why (Applied False, ClusterNotReady), and is looked at again when the Cluster turns Ready. Its deletion
// waits likewise, told once (CleanupFailed), unless the Cluster is being deleted: one kubectl-fedmesh unjoin holds
// is tried regardless, since the cluster stage no longer probes it and it would never turn Ready.
//
// plan.go and skip.go are the pure core (identity labels, conflict decisions, the record of what was applied, the
// Applied condition, whether an apply is needed); the Reconciler in execution.go, apply.go and delete.go does the
// I/O around it.
package execution
