// Package customization is the validating admission webhook of ResourceInterpreterCustomizations: it refuses one
// whose Lua does not compile or does not define its functions, reporting the Lua error with its line, and one that
// defines an operation another customization already defines for the same kind (on update, one the federator takes
// before it). Updates that change no spec, and those of a customization being deleted, pass.
package customization
