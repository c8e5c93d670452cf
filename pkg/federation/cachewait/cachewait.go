package cachewait

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Limit is how long a wait lasts at most: a cache that lags longer is under a load one more request does not
// change.
const Limit = time.Second

// Created waits, at most Limit, until reader (a cache) holds the object at key; obj receives it. Giving up is
// harmless: a pass that misses the object meets AlreadyExists and looks again later.
func Created(ctx context.Context, reader client.Reader, key client.ObjectKey, obj client.Object) {
	Shows(ctx, reader, key, obj, func(client.Object) bool { return true })
}

// Shows waits, at most Limit, until reader (a cache) holds the object at key and done is true of it; obj
// receives it. Giving up is harmless: a pass that reads the older copy writes again what was written.
func Shows(ctx context.Context, reader client.Reader, key client.ObjectKey, obj client.Object, done func(client.Object) bool) {
	_ = wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, Limit, true, func(ctx context.Context) (bool, error) {
		return reader.Get(ctx, key, obj) == nil && done(obj), nil
	})
}
