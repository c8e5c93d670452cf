// Package labels is label mode's write side: a mutating webhook stamps shard.BucketLabel on every create (but in
// kube-system, whose components must not wait on the manager) and on every update that lacks it, of a sharded
// resource; and a backfill reconciler labels, continuously, the objects that the webhook missed (created in
// kube-system, or while it was down or before it was registered). A gauge counts the objects still unlabeled.
package labels
