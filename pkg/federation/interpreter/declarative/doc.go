// Package declarative is the interpreter of ResourceInterpreterCustomizations: Lua scripts, written for Karmada's
// declarative customizations, that run unchanged in a sandboxed, pooled gopher-lua VM.
//
// Each call is bounded in time (WithTimeout) and in the memory its script holds (WithMemoryLimit, see memory.go);
// a call over either limit fails with a clear error and its VM is discarded, so the next call starts clean. A call
// cannot change what another sees: it gets its own globals and its own string, table, math, os and kube tables,
// and what all calls share is out of its reach (see sandbox.go).
package declarative
