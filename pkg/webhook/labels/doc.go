// Package labels is label mode's write side: a mutating webhook stamps shard.BucketLabel on every create and update
// of a sharded resource, and a backfill reconciler labels, continuously, the objects that the webhook missed
// (created or relabeled while it was down or before it was registered). Both leave kube-system alone. A gauge counts
// the objects still unlabeled.
package labels
