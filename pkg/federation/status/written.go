package status

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedmesh/fedmesh/pkg/federation/applystatus"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
)

// written remembers, per object, the resourceVersion its last status write by this stage left it at, until the
// cache shows that version. A stage skips a write whose status equals the cached one; its own writes do not queue
// it again, so a copy older than its last write must not be trusted for that: a member going A, B, A quickly
// would have B written, then the second A compared with the cached A of before and skipped, and B would stay.
type written struct {
	mu sync.Mutex
	rv map[types.NamespacedName]string
}

// record notes rv as key's version after a write; an empty rv (the write failed) forgets key.
func (w *written) record(key types.NamespacedName, rv string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if rv == "" {
		delete(w.rv, key)
		return
	}
	if w.rv == nil {
		w.rv = map[types.NamespacedName]string{}
	}
	w.rv[key] = rv
}

// stale reports whether cached, key's resourceVersion in the cache, is older than this stage's last write of it.
// Once the cache has caught up the record is dropped. Versions that do not compare are not stale.
func (w *written) stale(key types.NamespacedName, cached string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	rv, ok := w.rv[key]
	if !ok {
		return false
	}
	if c, err := resourceversion.CompareResourceVersion(cached, rv); err != nil || c >= 0 {
		delete(w.rv, key)
		return false
	}
	return true
}

func (w *written) forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.rv, key)
}

// applyStatus applies status to obj's status subresource as names.StatusFieldManager, and returns the
// resourceVersion the write left obj at ("" when unknown).
func applyStatus(ctx context.Context, c client.Client, obj client.Object, status any) (string, error) {
	rc := &rvClient{Client: c}
	err := applystatus.Apply(ctx, rc, obj, names.StatusFieldManager, status)
	if err != nil {
		return "", err
	}
	return rc.rv, nil
}

// rvClient is a client that keeps the resourceVersion of the object its last status apply returned (the API
// server's answer is decoded into the apply configuration, an unstructured object).
type rvClient struct {
	client.Client
	rv string
}

func (c *rvClient) Status() client.SubResourceWriter { return &rvWriter{c.Client.Status(), c} }

type rvWriter struct {
	client.SubResourceWriter
	c *rvClient
}

func (w *rvWriter) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	err := w.SubResourceWriter.Apply(ctx, obj, opts...)
	if o, ok := obj.(interface{ GetResourceVersion() string }); ok && err == nil {
		w.c.rv = o.GetResourceVersion()
	}
	return err
}
