// Package runner runs a selection of the benchmark scenarios — building fedmesh's binaries first, describing the
// machine — and writes their report. The bench command and the suite's CI test both use it.
package runner
