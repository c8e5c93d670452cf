// Package cachewait waits, briefly, for a controller's informer cache to show an object the controller has just
// created. A stage's own writes queue its next pass at once (a label patch, a status write, the created object's
// own event); a pass that reads a cache not yet showing the object would create it again and meet AlreadyExists:
// a wasted request and a retry.
package cachewait
