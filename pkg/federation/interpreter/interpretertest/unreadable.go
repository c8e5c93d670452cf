package interpretertest

import (
	"context"
	"errors"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Unreadable is a reader whose every list fails, as an API server a federator cannot reach.
type Unreadable struct{ client.Reader }

// List fails.
func (Unreadable) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("connection refused")
}
