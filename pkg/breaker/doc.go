// Package breaker is the proxy's traffic policy engine: deny rules, fault injection, circuit breakers, in-flight
// caps and rate limits, matched on a request's verb, resource, namespace and upstream cluster.
//
// The core is pure in the etcd-raft sense: Engine.Decide turns a Request into a Decision value before forwarding,
// Engine.Done takes the Outcome afterwards, and time and randomness are inputs (Options.Clock, Options.Rand). The one
// exception is the circuit breaker's open timeout, which sony/gobreaker measures with time.Now (v2.4.0 has no clock
// hook). Middleware is the thin HTTP layer that applies decisions and reports outcomes.
package breaker
