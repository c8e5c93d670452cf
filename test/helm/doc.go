// Package helm tests the fedmesh Helm chart (charts/fedmesh) with the real helm binary that `make binaries`
// builds: lint, rendering against golden files, the values schema refusing bad values, and install, upgrade and
// uninstall against a real API server whose controllers and fake nodes run the chart's workloads.
package helm
