// Package applystatus writes the part of an object's status that one federation stage owns with server-side
// apply. Several stages share a status (the scheduler, the binding and the status stages all write a
// ResourceBinding's): applied under its own field manager, each stage's write merges with the others' on the API
// server, so it neither reads before it writes nor fails on a conflict with another stage's write.
package applystatus
