package labels

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Backfill labels the objects of sharded resources that lack their bucket label or carry a wrong one: one
// controller per resource, over a metadata-only watch, so it keeps labeling for as long as the manager runs (objects
// created while the webhook was down, or relabeled later), not only at start-up. It patches metadata.labels alone,
// with a merge patch. The gauge
// fedmesh_manager_unlabeled_objects{resource} counts what is still unlabeled.
//
// Controllers run on the elected leader only, like the manager's other controllers.
type Backfill struct {
	mgr manager.Manager

	mu        sync.Mutex
	resources map[schema.GroupResource]*unlabeled
}

// NewBackfill adds a Backfill for gvrs to mgr. More resources can be added later, also while mgr runs, with Add.
func NewBackfill(mgr manager.Manager, gvrs ...schema.GroupVersionResource) (*Backfill, error) {
	b := &Backfill{mgr: mgr, resources: map[schema.GroupResource]*unlabeled{}}
	return b, b.Add(gvrs...)
}

// Add starts labeling the resources in gvrs that are not labeled yet; an empty Version means the preferred one.
// A resource is never removed: labeling a resource that is no longer in label mode does no harm. Each resource
// must be namespaced and known to the manager's RESTMapper.
func (b *Backfill) Add(gvrs ...schema.GroupVersionResource) error {
	for _, gvr := range gvrs {
		if err := b.add(gvr); err != nil {
			return fmt.Errorf("backfill %s: %w", gvr.GroupResource(), err)
		}
	}
	return nil
}

// Unlabeled is how many objects of resource gr the backfill has seen unlabeled and not labeled yet.
func (b *Backfill) Unlabeled(gr schema.GroupResource) int {
	b.mu.Lock()
	u := b.resources[gr]
	b.mu.Unlock()
	if u == nil {
		return 0
	}
	return u.len()
}

func (b *Backfill) add(gvr schema.GroupVersionResource) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	gr := gvr.GroupResource()
	if b.resources[gr] != nil {
		return nil
	}
	mapper := b.mgr.GetRESTMapper()
	gvk, err := mapper.KindFor(gvr)
	if err != nil {
		return err
	}
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return err
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		return fmt.Errorf("%s is cluster-scoped: only namespaced objects have a bucket", gr)
	}
	u := newUnlabeled(gr.String())
	r := &backfiller{client: b.mgr.GetClient(), gvk: gvk, unlabeled: u}
	c, err := controller.New("shard-label-backfill-"+gr.String(), b.mgr, controller.Options{
		Reconciler: r,
		// Add keeps one controller per resource; the check would only refuse a second manager in one process.
		SkipNameValidation: ptr.To(true),
	})
	if err != nil {
		return err
	}
	if err := c.Watch(source.Kind(b.mgr.GetCache(), r.newObject(), r.handler())); err != nil {
		return err
	}
	b.resources[gr] = u
	return nil
}

// backfiller labels one resource.
type backfiller struct {
	client    client.Client
	gvk       schema.GroupVersionKind
	unlabeled *unlabeled
}

func (r *backfiller) newObject() *metav1.PartialObjectMetadata {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(r.gvk)
	return obj
}

type objectHandler = handler.TypedFuncs[*metav1.PartialObjectMetadata, reconcile.Request]
type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// handler keeps the unlabeled set in step with the informer and queues only the objects that need a label.
func (r *backfiller) handler() objectHandler {
	observe := func(obj *metav1.PartialObjectMetadata, q queue) {
		key := types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}
		needs := needsLabel(obj)
		r.unlabeled.set(key, needs)
		if needs {
			q.Add(reconcile.Request{NamespacedName: key})
		}
	}
	return objectHandler{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[*metav1.PartialObjectMetadata], q queue) {
			observe(e.Object, q)
		},
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[*metav1.PartialObjectMetadata], q queue) {
			observe(e.ObjectNew, q)
		},
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[*metav1.PartialObjectMetadata], _ queue) {
			r.unlabeled.set(types.NamespacedName{Namespace: e.Object.Namespace, Name: e.Object.Name}, false)
		},
	}
}

// Reconcile labels one object, if it still needs it.
func (r *backfiller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	obj := r.newObject()
	if err := r.client.Get(ctx, req.NamespacedName, obj); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !needsLabel(obj) {
		return reconcile.Result{}, nil
	}
	err := r.client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, LabelPatch(obj.Namespace)))
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, err
}

// needsLabel reports whether the backfill labels obj: it lacks its right label.
func needsLabel(obj metav1.Object) bool {
	return !Labeled(obj)
}
