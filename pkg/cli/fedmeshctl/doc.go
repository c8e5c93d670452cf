// Package fedmeshctl turns fedmesh objects into what kubectl-fedmesh shows: views (plain structs with JSON tags,
// printed as-is for -o json|yaml) and kubectl-like tables, and merges the member clusters' own tables into one
// with a CLUSTER column. It does no I/O beyond writing to the given writer, so every view is table-tested from
// objects built in memory.
package fedmeshctl
