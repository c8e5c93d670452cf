// Package webhook holds fedmesh's admission webhooks, one subpackage each: labels stamps shard labels on creates
// (label mode) and backfills what the webhook missed; inject adds the proxy sidecar to the pods that ask for it
// (both served by the manager); customization refuses ResourceInterpreterCustomizations whose Lua does not compile
// or that define an operation another customization already defines for the same kind (served by the federator).
package webhook
