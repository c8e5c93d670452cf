// Package e2e holds fedmesh's end-to-end tests: the real binaries against real API servers started by
// test/cluster.
package e2e
