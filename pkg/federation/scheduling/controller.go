package scheduling

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

// DefaultSchedulerName is the scheduler name this controller answers to when Reconciler.SchedulerName is empty;
// bindings naming no scheduler are its too.
const DefaultSchedulerName = "default-scheduler"

// EventRecorder is the part of events.EventRecorder the controller uses.
type EventRecorder interface {
	Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any)
}

// Reconciler schedules ResourceBindings and ClusterResourceBindings.
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
}

// SetupWithManager registers two controllers, one per binding kind; both look at every binding again when a
// Cluster changes.
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
	err := ctrl.NewControllerManagedBy(mgr).
		Named("scheduler-resourcebinding").
		For(&workv1alpha1.ResourceBinding{}).
		Watches(&clusterv1alpha1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.allBindings(&workv1alpha1.ResourceBindingList{}))).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			return r.reconcile(ctx, req, &workv1alpha1.ResourceBinding{})
		}))
	if err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("scheduler-clusterresourcebinding").
		For(&workv1alpha1.ClusterResourceBinding{}).
		Watches(&clusterv1alpha1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.allBindings(&workv1alpha1.ClusterResourceBindingList{}))).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			return r.reconcile(ctx, req, &workv1alpha1.ClusterResourceBinding{})
		}))
}

// allBindings enqueues every binding of list's kind: a Cluster change can make any of them fit or unfit, and
// scheduling one whose result does not change costs no write.
func (r *Reconciler) allBindings(list client.ObjectList) handler.MapFunc {
	return func(ctx context.Context, _ client.Object) []reconcile.Request {
		l := list.DeepCopyObject().(client.ObjectList)
		if err := r.Client.List(ctx, l); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "list bindings for a cluster change")
			return nil
		}
		var out []reconcile.Request
		switch l := l.(type) {
		case *workv1alpha1.ResourceBindingList:
			for i := range l.Items {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&l.Items[i])})
			}
		case *workv1alpha1.ClusterResourceBindingList:
			for i := range l.Items {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&l.Items[i])})
			}
		}
		return out
	}
}

// parts are the spec and status of a binding of either kind.
func parts(obj client.Object) (*workv1alpha1.ResourceBindingSpec, *workv1alpha1.ResourceBindingStatus) {
	switch b := obj.(type) {
	case *workv1alpha1.ResourceBinding:
		return &b.Spec, &b.Status
	case *workv1alpha1.ClusterResourceBinding:
		return &b.Spec, &b.Status
	}
	panic("not a binding")
}

func (r *Reconciler) reconcile(ctx context.Context, req reconcile.Request, obj client.Object) (reconcile.Result, error) {
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !obj.GetDeletionTimestamp().IsZero() {
		return reconcile.Result{}, nil
	}
	if spec, _ := parts(obj); spec.SchedulerName != "" && spec.SchedulerName != r.SchedulerName {
		return reconcile.Result{}, nil
	}
	var clusters clusterv1alpha1.ClusterList
	if err := r.Client.List(ctx, &clusters); err != nil {
		return reconcile.Result{}, err
	}
	recheck, err := r.schedule(ctx, obj, clusters.Items)
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{RequeueAfter: recheck}, err
}
