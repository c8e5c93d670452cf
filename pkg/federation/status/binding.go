package status

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/applystatus"
	"github.com/fedmesh/fedmesh/pkg/federation/coalesce"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/rerun"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/rendering"
)

// StatusAggregator folds per-cluster statuses into a template's; the interpreter chain is one.
type StatusAggregator interface {
	Handles(gvk schema.GroupVersionKind, op interpreter.Operation) bool
	AggregateStatus(ctx context.Context, obj *unstructured.Unstructured, items []workv1alpha1.AggregatedStatusItem) (*unstructured.Unstructured, error)
}

// Renderings are the binding stage's outcomes of rendering each binding, and tell which bindings have a new one;
// *rendering.Store is one.
type Renderings interface {
	Subscribe(notify func(types.NamespacedName))
	Get(obj metav1.Object) *rendering.Outcome
	Forget(key types.NamespacedName)
}

// BindingReconciler writes each ResourceBinding's status, its aggregatedStatus from its Works and its
// FullyApplied condition, judged from the binding stage's outcome of rendering it and the Works, in one write;
// and the template's status from that.
type BindingReconciler struct {
	// Client reads bindings, Works and Clusters, and writes their status and the templates', in the host. It also
	// reads a template again after a conflict (the manager's client reads unstructured objects from the API
	// server).
	Client client.Client
	// Templates reads templates first (the detector's template cache, whose copy may lag); Client when nil.
	Templates  client.Reader
	Aggregator StatusAggregator
	// Renderings tell what the binding stage found rendering each binding, and which bindings it rendered anew.
	Renderings Renderings
	// Discovery of the host tells which template kinds have a status subresource; from the manager's config when nil.
	Discovery discovery.DiscoveryInterface
	// Coalesce is how long the changes of a binding's Works are gathered before its status is written; 0 writes
	// every change.
	Coalesce time.Duration
	// HoldLimit is how long a binding's status may wait for the next target cluster to report (see awaiting and
	// holds) before what has come is written, at least: under load, when clusters report further apart, the
	// limit grows with the gaps seen, up to maxHoldFactor times this; 0 does not wait.
	HoldLimit time.Duration
	// LayerChanges, if set, tells of each new set of the users' interpreter layers: the bindings of the kinds whose
	// statuses it may aggregate differently are looked at again at once. Nil leaves them to their next reconcile.
	LayerChanges *rerun.Notifier

	holds   holds
	wakeups *wakeups
	// written and templateWritten are this stage's last writes of each binding's status and of its template's.
	written, templateWritten written
	mu                       sync.Mutex
	// statusSubresource caches, per template resource, whether it has a status subresource.
	statusSubresource map[schema.GroupVersionResource]bool
}

// SetupWithManager registers the controller: ResourceBindings, their Works, and Clusters (whose readiness
// changes what their items say).
func (r *BindingReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Renderings == nil {
		return errors.New("binding-status: no Renderings to judge the FullyApplied conditions from")
	}
	var err error
	if r.wakeups, err = newWakeups(mgr, nil); err != nil {
		return err
	}
	// A binding rendered anew has new Works on their way: gathered within the coalescing window with their news.
	r.Renderings.Subscribe(r.wakeups.wake)
	if r.Discovery == nil {
		dc, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
		if err != nil {
			return err
		}
		r.Discovery = dc
	}
	if r.Templates == nil {
		r.Templates = r.Client
	}
	bldr := ctrl.NewControllerManagedBy(mgr).
		Named("binding-status").
		// A binding's own changes are gathered too: placing it, rendering its Works and applying them come in
		// quick succession, and each would otherwise restate its status. Of a binding, only its spec (targets,
		// deletion) changes its items, and the scheduler's verdict on one it found no cluster for its FullyApplied:
		// the rest of the status the stages write (this one's too) changes neither.
		Watches(&workv1alpha1.ResourceBinding{}, coalesce.Handler(r.Coalesce, coalesce.Self),
			builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{},
				predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool { return placementFailed(e.ObjectOld, e.ObjectNew) }}))).
		Watches(&workv1alpha1.Work{}, coalesce.Handler(r.Coalesce, names.BindingRequests)).
		WatchesRawSource(r.wakeups.source(r.Coalesce)).
		// Of a Cluster, items read only whether it is Ready; its other status changes with every probe.
		Watches(&clusterv1alpha1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.bindingsOnCluster),
			builder.WithPredicates(predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool { return readinessChanged(e.ObjectOld, e.ObjectNew) }}))
	if r.LayerChanges != nil {
		bldr = bldr.WatchesRawSource(rerun.Bindings(r.LayerChanges, mgr.GetCache(), interpreter.AggregateStatus))
	}
	return bldr.Complete(r)
}

func (r *BindingReconciler) bindingsOnCluster(ctx context.Context, obj client.Object) []reconcile.Request {
	var works workv1alpha1.WorkList
	if err := r.Client.List(ctx, &works, client.MatchingLabels{names.ClusterLabel: names.LabelValue(obj.GetName())}); err != nil {
		log.FromContext(ctx).Error(err, "list Works of cluster", "cluster", obj.GetName())
		return nil
	}
	seen := map[reconcile.Request]bool{}
	var reqs []reconcile.Request
	for i := range works.Items {
		for _, req := range names.BindingRequests(ctx, &works.Items[i]) {
			if !seen[req] {
				seen[req] = true
				reqs = append(reqs, req)
			}
		}
	}
	return reqs
}

// Reconcile restates one binding's aggregatedStatus and its template's status.
func (r *BindingReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var rb workv1alpha1.ResourceBinding
	if err := r.Client.Get(ctx, req.NamespacedName, &rb); err != nil {
		if apierrors.IsNotFound(err) {
			r.holds.forget(req.NamespacedName)
			r.Renderings.Forget(req.NamespacedName)
			r.written.forget(req.NamespacedName)
			r.templateWritten.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var works workv1alpha1.WorkList
	if err := r.Client.List(ctx, &works, client.InNamespace(rb.Namespace), client.MatchingLabels{names.BindingLabel: names.LabelValue(rb.Name)}); err != nil {
		return ctrl.Result{}, err
	}
	ready := map[string]bool{}
	var clusters clusterv1alpha1.ClusterList
	// Only their readiness is read: a Cluster's status lists every API its member serves, a copy not worth making
	// per pass.
	if err := r.Client.List(ctx, &clusters, client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, err
	}
	for i := range clusters.Items {
		ready[clusters.Items[i].Name] = clusterReady(&clusters.Items[i])
	}
	isReady := func(c string) bool { return ready[c] }
	items := aggregatedItems(rb.Spec.Clusters, works.Items, isReady)
	status := workv1alpha1.ResourceBindingStatus{AggregatedStatus: items}
	cond, condNews, rendered := r.fullyApplied(&rb, works.Items)
	if cond != nil {
		status.Conditions = []metav1.Condition{*cond}
	}
	// The hold begins with the first news to write, so that it is spent waiting for the other clusters only.
	// A copy from before this stage's last write says nothing of what is written now.
	stale := r.written.stale(req.NamespacedName, rb.ResourceVersion)
	if itemsToWrite(rb.Status.AggregatedStatus, items) || condNews || stale {
		waiting := awaiting(rb.Spec.Clusters, works.Items, isReady)
		if !rendered && rb.DeletionTimestamp.IsZero() {
			waiting++ // the binding stage's outcome of rendering this generation, which wakes this binding when it comes
		}
		wait := r.holds.wait(req.NamespacedName, waiting, time.Now(), r.HoldLimit)
		holdLimit.Set(r.holds.learntLimit(r.HoldLimit).Seconds())
		if wait > 0 {
			// The Works' next changes enqueue the binding again; this is for a cluster that never reports.
			return ctrl.Result{RequeueAfter: wait}, nil
		}
		// The condition goes in every write, changed or not: a field this manager leaves out of an apply is removed.
		rv, err := applyStatus(ctx, r.Client, &rb, &status)
		r.written.record(req.NamespacedName, rv)
		if err != nil {
			return ctrl.Result{}, err
		}
		observePropagation(meta.FindStatusCondition(rb.Status.Conditions, workv1alpha1.ConditionFullyApplied), cond)
	} else {
		r.holds.forget(req.NamespacedName)
	}
	if !rb.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, r.reflectToTemplate(ctx, &rb, items)
}

// fullyApplied is the FullyApplied condition to write for rb, judged from the binding stage's outcome of
// rendering rb and its Works, whether it says something other than the one rb shows, and whether there was an
// outcome to judge from. Without one for rb's generation (the binding stage has not rendered it yet) it is the
// condition rb shows, or none.
func (r *BindingReconciler) fullyApplied(rb *workv1alpha1.ResourceBinding, works []workv1alpha1.Work) (cond *metav1.Condition, news, rendered bool) {
	written := meta.FindStatusCondition(rb.Status.Conditions, workv1alpha1.ConditionFullyApplied)
	out := r.Renderings.Get(rb)
	if out == nil {
		return written, false, false
	}
	next, waiting := rendering.FullyApplied(rb, *out, works)
	if written == nil && waiting {
		// A new binding whose Works are on their way: the condition first appears when they are applied, or one
		// fails, sparing the writes of each Work being made and picked up.
		return nil, false, true
	}
	c, changed := applystatus.Condition(rb.Status.Conditions, next)
	return &c, changed, true
}

// reflectToTemplate writes the template's status from items through the interpreter, when its kind has a status
// subresource and an aggregation, and the status changed.
func (r *BindingReconciler) reflectToTemplate(ctx context.Context, rb *workv1alpha1.ResourceBinding, items []workv1alpha1.AggregatedStatusItem) error {
	ref := rb.Spec.Resource
	gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
	if !r.Aggregator.Handles(gvk, interpreter.AggregateStatus) {
		return nil
	}
	has, err := r.hasStatus(gvk)
	if err != nil || !has {
		return err
	}
	key := types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}
	read := r.Templates
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		tpl := &unstructured.Unstructured{}
		tpl.SetGroupVersionKind(gvk)
		if err := read.Get(ctx, key, tpl); err != nil {
			return client.IgnoreNotFound(err)
		}
		// A copy older than this stage's last write of the template is stale as well.
		if read != r.Client && r.templateWritten.stale(client.ObjectKeyFromObject(rb), tpl.GetResourceVersion()) {
			if err := r.Client.Get(ctx, key, tpl); err != nil {
				return client.IgnoreNotFound(err)
			}
		}
		// A conflict means the copy read was stale: read the next from the API server.
		read = r.Client
		if ref.UID != "" && tpl.GetUID() != ref.UID {
			return nil // a new template of the same name; its binding will be rebuilt
		}
		out, err := r.Aggregator.AggregateStatus(ctx, tpl, items)
		if err != nil {
			return fmt.Errorf("aggregate status of %s %s: %w", ref.Kind, key, err)
		}
		if sameStatus(tpl.Object["status"], out.Object["status"]) {
			return nil
		}
		err = r.Client.Status().Update(ctx, out)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err == nil {
			r.templateWritten.record(client.ObjectKeyFromObject(rb), out.GetResourceVersion())
		}
		return err
	})
}

// hasStatus reports whether gvk's resource in the host has a status subresource.
func (r *BindingReconciler) hasStatus(gvk schema.GroupVersionKind) (bool, error) {
	mapping, err := r.Client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return false, err
	}
	gvr := mapping.Resource
	r.mu.Lock()
	has, known := r.statusSubresource[gvr]
	r.mu.Unlock()
	if known {
		return has, nil
	}
	list, err := r.Discovery.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if err != nil {
		return false, err
	}
	for _, res := range list.APIResources {
		if res.Name == gvr.Resource+"/status" {
			has = true
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.statusSubresource == nil {
		r.statusSubresource = map[schema.GroupVersionResource]bool{}
	}
	r.statusSubresource[gvr] = has
	return has, nil
}
