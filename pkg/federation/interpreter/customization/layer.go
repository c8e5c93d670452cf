package customization

import (
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/declarative"
)

// Layer answers with the current set of customizations, swapped in whole by Set. It starts empty, handling
// nothing.
type Layer = interpreter.Swappable[*declarative.Interpreter]

// NewLayer is a layer with no customizations.
func NewLayer() *Layer {
	empty, err := declarative.New(nil)
	if err != nil {
		panic(err) // an empty set always compiles
	}
	return interpreter.NewSwappable(empty)
}
