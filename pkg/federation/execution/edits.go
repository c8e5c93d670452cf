package execution

import (
	"context"
	"maps"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// memberEdits turns member objects' edits, heard from the work-status stage's member watches, into reconciles of
// their Works: a member edit of a field the federation sets is applied over, as the fields the federation sets win.
type memberEdits struct {
	queue atomic.Pointer[workqueue.TypedRateLimitingInterface[reconcile.Request]]
}

// source hands the controller's queue to the edits once it starts; edits heard before are dropped, as the
// controller's start reconciles every Work anyway.
func (m *memberEdits) source() source.Source {
	return source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		m.queue.Store(&q)
		return nil
	})
}

// MemberObjectUpdated reconciles work when its member object changed beyond its status (memberEdited). A pass
// that finds the object as its manifest says (retained fields included) only reads it: the federation's own apply,
// which moves the generation too, wakes one such pass, and a member controller's write of a field it owns (an HPA's
// retained replicas) no more.
func (r *Reconciler) MemberObjectUpdated(work types.NamespacedName, old, cur *unstructured.Unstructured) {
	if q := r.edits.queue.Load(); q != nil && memberEdited(old, cur) {
		(*q).Add(reconcile.Request{NamespacedName: work})
	}
}

// memberEdited reports whether a member object changed beyond its status from old to cur, so that it may no longer
// hold what the federation applied. An object with a generation has changed so when the generation (which the
// server moves on every change but of status and metadata), its labels or its annotations did: a Deployment's
// status, which changes all the time, is not compared. One without (a ConfigMap, a Service) is compared whole but
// for its status and the metadata the server sets.
func memberEdited(old, cur *unstructured.Unstructured) bool {
	if old.GetGeneration() != 0 || cur.GetGeneration() != 0 {
		return old.GetGeneration() != cur.GetGeneration() ||
			!maps.Equal(old.GetLabels(), cur.GetLabels()) || !maps.Equal(old.GetAnnotations(), cur.GetAnnotations())
	}
	return !equality.Semantic.DeepEqual(withoutStatus(old.Object), withoutStatus(cur.Object))
}

// withoutStatus is obj without its status and serverMetadata; obj is not changed.
func withoutStatus(obj map[string]any) map[string]any {
	out := maps.Clone(withoutServerMetadata(obj))
	delete(out, "status")
	return out
}
