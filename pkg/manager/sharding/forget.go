package sharding

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ktypes "k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/xds"
)

// A ShardingConfig's state in this process outlives it unless dropped: the documents published for its shards stay
// in the xDS caches, its proxies' records in the xDS server, its handover bookkeeping here. The reconcile that finds
// it gone drops them (forget); the records of its proxies still connected then go once they disconnect (sweep).

// sweepEvery is how often the records of disconnected proxies of ShardingConfigs that do not exist are looked for.
const sweepEvery = time.Minute

// publishedTo records that documents were published under resource name for ShardingConfig key.
func (r *Reconciler) publishedTo(key ktypes.NamespacedName, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.published == nil {
		r.published = map[ktypes.NamespacedName]map[string]bool{}
	}
	if r.published[key] == nil {
		r.published[key] = map[string]bool{}
	}
	r.published[key][name] = true
}

// forget drops what this process holds of ShardingConfig key, which is gone: its documents of both types under every
// name published for it (its proxies keep the last version they got, see xds.Snapshotter.Delete; a ShardingConfig
// created again under the name publishes above their epoch, see heldEpoch), the records of its disconnected proxies,
// and its bookkeeping. A name whose documents could not be deleted stays remembered, for the retry.
func (r *Reconciler) forget(ctx context.Context, key ktypes.NamespacedName) error {
	r.mu.Lock()
	names := slices.Sorted(maps.Keys(r.published[key]))
	r.mu.Unlock()
	var errs []error
	for _, name := range names {
		var failed bool
		for _, t := range xds.TypeURLs {
			if err := r.Publisher.Delete(t, name); err != nil {
				errs, failed = append(errs, err), true
			}
		}
		if !failed {
			r.mu.Lock()
			delete(r.published[key], name)
			r.mu.Unlock()
		}
	}
	r.forgetProxies(key, r.Publisher.Acks())
	r.mu.Lock()
	if len(r.published[key]) == 0 {
		delete(r.published, key)
	}
	delete(r.waiting, key)
	delete(r.revoked, key)
	delete(r.written, key)
	r.mu.Unlock()
	r.objects.forget(key)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("withdrawing the documents of %s: %w", key, err)
	}
	log.FromContext(ctx).V(1).Info("forgot a deleted ShardingConfig", "documents", len(names))
	return nil
}

// forgetProxies drops the records of the proxies of ShardingConfig key among acks that no handover would wait for
// (waitedFor: disconnected, and released or out of contact past their lease), and their releases. The others stay
// until the sweep finds them so: a proxy still connected has its stream served, and one disconnected within its
// lease still serves its last document, so a ShardingConfig created again under the name must see its epoch
// (heldEpoch) and wait for it.
func (r *Reconciler) forgetProxies(key ktypes.NamespacedName, acks map[string]xds.NodeState) {
	f, ok := r.Publisher.(forgetter)
	if !ok {
		return
	}
	serving, now := r.servingSince(), time.Now()
	var gone []string
	for id, node := range acks {
		if node.Metadata.ShardingConfig == key && !r.waitedFor(stray{key: id, node: node}, serving, now) {
			gone = append(gone, id)
		}
	}
	for _, id := range gone {
		f.Forget(id)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range gone {
		delete(r.released, id)
	}
}

// sweep forgets the records of disconnected proxies whose ShardingConfig does not exist: those still connected when
// it was deleted, and those naming one that never existed here. A ShardingConfig this process publishes for is
// not looked up.
func (r *Reconciler) sweep(ctx context.Context) {
	acks := r.Publisher.Acks()
	checked := map[ktypes.NamespacedName]bool{}
	for _, node := range acks {
		key := node.Metadata.ShardingConfig
		if node.Connected || checked[key] {
			continue
		}
		checked[key] = true
		r.mu.Lock()
		_, live := r.published[key]
		r.mu.Unlock()
		if live {
			continue
		}
		if err := r.Client.Get(ctx, key, &meshv1alpha1.ShardingConfig{}); apierrors.IsNotFound(err) {
			r.forgetProxies(key, acks)
		}
	}
}

// forget drops the counts of ShardingConfig key.
func (c *objectCounter) forget(key ktypes.NamespacedName) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.counts, key)
}
