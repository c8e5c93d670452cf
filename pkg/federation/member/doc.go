// Package member builds clients for member clusters from their Cluster objects and credentials Secrets in the
// host, optionally routed through the fedmesh proxy (which fronts members at /clusters/<name>/), and caches them
// until the Cluster or its Secret changes.
package member
