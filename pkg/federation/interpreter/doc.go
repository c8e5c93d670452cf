// Package interpreter is the contract between the federation controllers and the code that understands a kind:
// how many replicas a template has and what one needs, how to give a cluster its share, which fields a member
// cluster owns, how member statuses fold back into the template, whether a member's copy is healthy, and what
// else the template needs propagated with it.
//
// Interpreter is that contract; Chain asks several interpreters in the order of DESIGN.md section 4 (declarative
// Lua customization, webhook, bundled customizations, native Go) and the first that handles a kind and operation
// answers. Do runs one operation from a Request, for the offline CLI and the fixture tests.
package interpreter
