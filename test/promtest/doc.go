// Package promtest reads figures out of Prometheus metrics for tests and benchmarks: from a registry in the
// test's own process (controller-runtime's, say) or from families scraped off a /metrics endpoint.
package promtest
