package labelmode

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
)

// ReasonUnresolvedResource is the reason of the Warning Event on a label-mode ShardingConfig that names a resource the
// API server does not serve: its objects are not labeled until it does.
const ReasonUnresolvedResource = "UnresolvedResource"

// report records, with an Event on each label-mode config and a log line, the resources it names that did not
// resolve. It reports a config again only when its unresolved resources change.
func (r *Reconciler) report(ctx context.Context, configs []meshv1alpha1.ShardingConfig, unresolved map[schema.GroupResource]error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reported == nil {
		r.reported = map[types.UID]string{}
	}
	seen := map[types.UID]bool{}
	for i := range configs {
		sc := &configs[i]
		if sc.Spec.FilterMode != meshv1alpha1.FilterModeLabel || sc.DeletionTimestamp != nil {
			continue
		}
		var names, reasons []string
		for _, res := range sc.Spec.Resources {
			gr := schema.GroupResource{Group: res.Group, Resource: res.Resource}
			if err, ok := unresolved[gr]; ok {
				names = append(names, gr.String())
				reasons = append(reasons, fmt.Sprintf("%s: %v", gr, err))
			}
		}
		if len(names) == 0 {
			continue
		}
		seen[sc.UID] = true
		key := strings.Join(names, ",")
		if r.reported[sc.UID] == key {
			continue
		}
		r.reported[sc.UID] = key
		log.FromContext(ctx).Info("label mode cannot backfill resources the API server does not serve; the others are backfilled",
			"shardingConfig", types.NamespacedName{Namespace: sc.Namespace, Name: sc.Name}, "resources", names,
			"retryAfter", RetryUnresolved)
		if r.Recorder != nil {
			r.Recorder.Eventf(sc, corev1.EventTypeWarning, ReasonUnresolvedResource,
				"label mode cannot backfill %s (%s); the other resources are backfilled, these are tried again every %s",
				key, strings.Join(reasons, "; "), RetryUnresolved)
		}
	}
	for uid := range r.reported {
		if !seen[uid] {
			delete(r.reported, uid)
		}
	}
}
