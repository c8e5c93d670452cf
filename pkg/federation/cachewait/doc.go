// Package cachewait waits, briefly, for a controller's informer cache to show what the controller has just
// written. A stage's own writes queue its next pass at once (a label patch, a status write, the created object's
// own event); a pass that reads a cache not showing the write yet would make it again: a create meets
// AlreadyExists (a wasted request and a retry), a status is written twice. A Waiter is woken by the informer
// delivering the object, so waiting costs nothing while the cache lags.
package cachewait
