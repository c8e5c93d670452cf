package webhook

import "github.com/fedmesh/fedmesh/pkg/federation/interpreter"

// Layer answers with the current set of webhooks, swapped in whole by Set. It starts empty, handling nothing.
type Layer = interpreter.Swappable[*Interpreter]

// NewLayer is a layer without webhooks.
func NewLayer() *Layer { return interpreter.NewSwappable(&Interpreter{}) }
