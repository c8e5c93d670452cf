// Package labels is label mode's write side: a mutating webhook stamps shard.BucketLabel on every create of a
// sharded resource, and a backfill reconciler labels, continuously, the objects that the webhook missed (created
// while it was down or before it was registered, or relabeled by someone). A gauge counts the objects still
// unlabeled.
package labels
