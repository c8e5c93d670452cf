// Package docs tests fedmesh's documentation: every shell block of docs/*.md says how it is treated (a
// "<!-- test: MODE -->" comment above it), blocks marked run are run against a real API server with fedmesh's
// CRDs, and the others are checked: the make targets, scripts, files, chart values and fedmesh binaries' flags
// they name must exist. It also checks the Dockerfile and `make images` without Docker.
package docs
