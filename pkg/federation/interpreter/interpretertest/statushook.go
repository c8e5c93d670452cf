package interpretertest

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StatusHooked is a client that calls Before ahead of each status update: a test lands an edit there, between a
// reconciler's read and its status write.
type StatusHooked struct {
	client.Client
	Before func()
}

// Status is the client's status writer, calling Before ahead of each update.
func (h StatusHooked) Status() client.SubResourceWriter {
	return hookedWriter{h.Client.Status(), h.Before}
}

type hookedWriter struct {
	client.SubResourceWriter
	before func()
}

func (w hookedWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	w.before()
	return w.SubResourceWriter.Update(ctx, obj, opts...)
}
