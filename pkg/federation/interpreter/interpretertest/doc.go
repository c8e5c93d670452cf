// Package interpretertest runs interpreter fixtures: YAML files that give an operation, its inputs and the output
// expected, so that the native interpreter, bundled customizations and users' own scripts are tested the same way.
package interpretertest
