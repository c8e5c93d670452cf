// Package declarative is the interpreter of ResourceInterpreterCustomizations: Lua scripts, written for Karmada's
// declarative customizations, that run unchanged in a sandboxed, pooled gopher-lua VM.
package declarative
