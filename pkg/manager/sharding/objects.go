package sharding

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ktypes "k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
)

// objectCounter measures how many sharded objects each namespace holds, so the status shows objects per shard
// (the skew that matters for an operator's memory). Counting lists every sharded resource, metadata only and in
// pages, straight from the API server (no informer holds them); it runs at most once per interval per config.
type objectCounter struct {
	reader   client.Reader
	mapper   meta.RESTMapper
	interval time.Duration

	mu     sync.Mutex
	counts map[ktypes.NamespacedName]objectCount
}

type objectCount struct {
	at          time.Time
	perNS       map[string]int64
	generation  int64
	measuredAny bool
}

// perNamespace returns the latest counts for sc, measuring again when they are older than the interval. A config
// without an explicit resources list is not counted (every namespaced resource would be too much to list).
func (c *objectCounter) perNamespace(ctx context.Context, sc *meshv1alpha1.ShardingConfig) (map[string]int64, bool) {
	if c == nil || c.reader == nil || len(sc.Spec.Resources) == 0 {
		return nil, false
	}
	key := ktypes.NamespacedName{Namespace: sc.Namespace, Name: sc.Name}
	c.mu.Lock()
	cur, ok := c.counts[key]
	c.mu.Unlock()
	if ok && cur.generation == sc.Generation && time.Since(cur.at) < c.interval {
		return cur.perNS, cur.measuredAny
	}
	perNS := map[string]int64{}
	measured := false
	for _, gr := range sc.Spec.Resources {
		gvk, err := c.mapper.KindFor(schema.GroupVersionResource{Group: gr.Group, Resource: gr.Resource})
		if err != nil {
			continue
		}
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		opts := &client.ListOptions{Limit: 500}
		for {
			if err := c.reader.List(ctx, list, opts); err != nil {
				break
			}
			measured = true
			for _, obj := range list.Items {
				perNS[obj.Namespace]++
			}
			if opts.Continue = list.Continue; opts.Continue == "" {
				break
			}
		}
	}
	c.mu.Lock()
	if c.counts == nil {
		c.counts = map[ktypes.NamespacedName]objectCount{}
	}
	c.counts[key] = objectCount{at: time.Now(), perNS: perNS, generation: sc.Generation, measuredAny: measured}
	c.mu.Unlock()
	return perNS, measured
}
