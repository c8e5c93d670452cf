// Package scenarios holds the benchmark scenarios of issue 8, each a suite.Scenario measured against real API
// servers (test/cluster), fedmesh's binaries (test/fedrun) and federations (test/fedtest) on this machine.
package scenarios
