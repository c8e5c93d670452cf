package scheduling

import (
	"context"
	"maps"
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/cachewait"
	"github.com/fedmesh/fedmesh/pkg/federation/scheduler"
)

// DefaultSchedulerName is the scheduler name this controller answers to when Reconciler.SchedulerName is empty;
// bindings naming no scheduler are its too.
const DefaultSchedulerName = "default-scheduler"

// EventRecorder is the part of k8s.io/client-go/tools/record.EventRecorder the controller uses (package eventrecord
// gives one).
type EventRecorder interface {
	Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any)
}

// Reconciler schedules ResourceBindings.
type Reconciler struct {
	// Client reads (from the cache) and writes bindings and reads Clusters.
	Client client.Client
	// APIReader reads a binding afresh after a write conflict; nil means Client.
	APIReader client.Reader
	Recorder  EventRecorder
	// SchedulerName is the spec.schedulerName of the bindings this scheduler places; default DefaultSchedulerName.
	SchedulerName string
	// DefaultToleration is how long a binding stays on an unhealthy cluster when its tolerations do not say; 0
	// means scheduler.DefaultToleration.
	DefaultToleration time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	// Cached waits for the cache to show a binding's status once written (the federator shares one among its
	// stages); nil makes one for the kinds this stage waits on.
	Cached *cachewait.Waiter

	unhealthy unhealthyMemory
	room      roomMemory
}

// SetupWithManager registers the controller; it looks at bindings again when a Cluster changes (see
// clusterEvents).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.APIReader == nil {
		r.APIReader = r.Client
	}
	if r.SchedulerName == "" {
		r.SchedulerName = DefaultSchedulerName
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	var err error
	if r.Cached == nil {
		if r.Cached, err = cachewait.For(context.Background(), mgr.GetCache(), &workv1alpha1.ResourceBinding{}); err != nil {
			return err
		}
	}
	// A binding is placed by its spec (and the Clusters): the status the other stages write (FullyApplied, the
	// aggregated status, two or more writes per binding) changes nothing the scheduler reads, but for the health
	// application failover watches.
	relevantChanges := builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, failoverInputChanged()))
	return ctrl.NewControllerManagedBy(mgr).
		Named("scheduler-resourcebinding").
		Watches(&workv1alpha1.ResourceBinding{}, bindingEvents(), relevantChanges).
		Watches(&clusterv1alpha1.Cluster{}, r.clusterEvents()).
		Complete(r)
}

// bindingEvents queues the binding of each event at its schedule priority (see enqueue).
func bindingEvents() handler.EventHandler {
	add := func(obj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		if b, ok := obj.(*workv1alpha1.ResourceBinding); ok {
			enqueue(q, b)
		}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.ObjectNew, q)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
		GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
	}
}

// enqueue queues b at its schedule priority, as Karmada's priority scheduling: the controller's queue hands out
// higher priorities first and equal ones in the order they came, so that with many bindings waiting (a start, a
// cluster's change) those of higher PriorityClasses are placed first. Requeues keep the priority.
func enqueue(q workqueue.TypedRateLimitingInterface[reconcile.Request], b *workv1alpha1.ResourceBinding) {
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(b)}
	pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request])
	if !ok {
		q.Add(req)
		return
	}
	var priority int
	if sp := b.Spec.SchedulePriority; sp != nil {
		priority = int(sp.Priority)
	}
	pq.AddWithOpts(priorityqueue.AddOpts{Priority: &priority}, req)
}

// clusterEvents enqueues, on a Cluster change, the bindings whose placement it can change: every
// one when a Cluster comes, goes or changes what filters and scores clusters; when just its free resources moved
// (see scheduler.ClusterChange), only those not scheduled and those waiting for room on it (roomMemory).
// Scheduling a binding whose result does not change costs no write, but with many bindings, looking at each again
// on every capacity report would keep the scheduler busy.
func (r *Reconciler) clusterEvents() handler.EventHandler {
	all := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		r.enqueueBindings(ctx, q, func(*workv1alpha1.ResourceBinding) bool { return true })
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, _ event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			all(ctx, q)
		},
		DeleteFunc: func(ctx context.Context, _ event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			all(ctx, q)
		},
		GenericFunc: func(ctx context.Context, _ event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			all(ctx, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			old, ok1 := e.ObjectOld.(*clusterv1alpha1.Cluster)
			cur, ok2 := e.ObjectNew.(*clusterv1alpha1.Cluster)
			if !ok1 || !ok2 {
				return
			}
			switch scheduler.ClusterChange(old, cur) {
			case scheduler.PlacementChanged:
				all(ctx, q)
			case scheduler.CapacityChanged:
				waiting := r.room.on(cur.Name)
				r.enqueueBindings(ctx, q, func(b *workv1alpha1.ResourceBinding) bool {
					return waiting[client.ObjectKeyFromObject(b)] ||
						!meta.IsStatusConditionTrue(b.Status.Conditions, workv1alpha1.ConditionScheduled)
				})
			}
		},
	}
}

// enqueueBindings adds the bindings that pass keep.
func (r *Reconciler) enqueueBindings(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], keep func(*workv1alpha1.ResourceBinding) bool) {
	var l workv1alpha1.ResourceBindingList
	// Read only: the cache's objects need no copies.
	if err := r.Client.List(ctx, &l, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list bindings for a cluster change")
		return
	}
	for i := range l.Items {
		if keep(&l.Items[i]) {
			enqueue(q, &l.Items[i])
		}
	}
}

// Reconcile places the binding req names.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	obj := &workv1alpha1.ResourceBinding{}
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !obj.GetDeletionTimestamp().IsZero() {
		r.forget(req.NamespacedName)
		return reconcile.Result{}, nil
	}
	if spec := obj.Spec; spec.SchedulerName != "" && spec.SchedulerName != r.SchedulerName {
		r.forget(req.NamespacedName)
		return reconcile.Result{}, nil
	}
	r.room.waitAll(req.NamespacedName) // before the Clusters are read; the decision narrows it
	var clusters clusterv1alpha1.ClusterList
	// Read, never written: a Cluster's status lists every API its member serves, a copy not worth making per pass.
	if err := r.Client.List(ctx, &clusters, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, err
	}
	recheck, err := r.schedule(ctx, obj, clusters.Items)
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{RequeueAfter: recheck}, err
}

// forget drops what the controller remembers of a binding it no longer places.
func (r *Reconciler) forget(key types.NamespacedName) {
	r.unhealthy.set(key, nil)
	r.room.set(key, nil)
}

// failoverInputChanged passes a status update of a binding with application failover that changes a cluster's health,
// and, of one whose application failover preserves state, one that changes what a cluster where the workload is
// Unhealthy reports (a failover waiting for state it could not read goes ahead as soon as the state is there), and,
// of one whose cluster failover preserves state, one that changes what any cluster reports (the state recorded).
func failoverInputChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			old, ok1 := e.ObjectOld.(*workv1alpha1.ResourceBinding)
			cur, ok2 := e.ObjectNew.(*workv1alpha1.ResourceBinding)
			if !ok1 || !ok2 || cur.Spec.Failover == nil {
				return false
			}
			f := cur.Spec.Failover
			if sp := scheduler.StatePreservation(f, scheduler.EvictionReason); sp != nil && !maps.Equal(reports(old, ""), reports(cur, "")) &&
				!reflect.DeepEqual(scheduler.RecordState(sp, cur.Spec.Clusters, old.Status.AggregatedStatus, nil),
					scheduler.RecordState(sp, cur.Spec.Clusters, cur.Status.AggregatedStatus, nil)) {
				return true // the state to record from the targets changed
			}
			if f.Application == nil {
				return false
			}
			return !maps.Equal(healthOf(old), healthOf(cur)) || scheduler.StatePreservation(f, scheduler.ApplicationFailureReason) != nil &&
				!maps.Equal(reports(old, workv1alpha1.ResourceUnhealthy), reports(cur, workv1alpha1.ResourceUnhealthy))
		},
	}
}

func healthOf(b *workv1alpha1.ResourceBinding) map[string]workv1alpha1.ResourceHealth {
	out := make(map[string]workv1alpha1.ResourceHealth, len(b.Status.AggregatedStatus))
	for _, item := range b.Status.AggregatedStatus {
		out[item.ClusterName] = item.Health
	}
	return out
}

// reports is the status of the workload on each cluster where its health is health (any, when empty), as the
// binding holds it.
func reports(b *workv1alpha1.ResourceBinding, health workv1alpha1.ResourceHealth) map[string]string {
	out := map[string]string{}
	for _, item := range b.Status.AggregatedStatus {
		if (health == "" || item.Health == health) && item.Status != nil {
			out[item.ClusterName] = string(item.Status.Raw)
		}
	}
	return out
}
