// Package podsync measures what a pod informer's initial LIST and sync cost: time, bytes read, the heap its store
// holds and the pods in it. The benchmark measures it in its own process and, through cmd replica, in a process
// of its own per shard.
package podsync
