// Package names holds the names, labels and annotations the federation controllers agree on: how a
// template's ResourceBinding and Works are named, how a template is claimed by its policy, and how the objects
// fedmesh applies to member clusters are marked. Every stage reads and writes these through this package so the
// stages stay independent of each other's code.
package names
