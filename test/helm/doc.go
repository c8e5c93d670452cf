// Package helm tests the fedmesh Helm chart (charts/fedmesh) with the real helm binary that `make binaries`
// builds: lint, rendering against golden files, the values schema refusing bad values, and install, upgrade and
// uninstall against a real API server whose controllers and fake nodes run the chart's workloads. The binaries of
// this repo run as local processes from the chart's own pods (injected proxy included) to prove the sharded path.
package helm
