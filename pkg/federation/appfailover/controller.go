package appfailover

import (
	"context"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

// ReasonApplicationFailover is the event on a binding that left clusters where its workload stayed unhealthy.
const ReasonApplicationFailover = "ApplicationFailover"

// EventRecorder records events on bindings (the manager's GetEventRecorder returns one).
type EventRecorder interface {
	Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any)
}

// Reconciler moves workloads off the clusters where they stay unhealthy.
type Reconciler struct {
	// Client reads bindings (cached) and writes their spec; the manager's when nil.
	Client client.Client
	// Recorder records an event for each failover; nil records none.
	Recorder EventRecorder
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	mu sync.Mutex
	// since is, per binding, since when each of its clusters has been Unhealthy. It lives in memory, as in
	// Karmada: a restarted federator counts the toleration again.
	since map[types.NamespacedName]map[string]time.Time
}

// SetupWithManager watches the bindings whose policy asks for application failover.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	r.since = map[types.NamespacedName]map[string]time.Time{}
	wanted := predicate.NewPredicateFuncs(func(obj client.Object) bool {
		b, ok := obj.(*workv1alpha1.ResourceBinding)
		return ok && application(b) != nil
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("application-failover").
		For(&workv1alpha1.ResourceBinding{}, builder.WithPredicates(wanted)).
		Complete(r)
}

// Reconcile takes the binding off the clusters where its workload stayed unhealthy past the toleration.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var b workv1alpha1.ResourceBinding
	err := r.Client.Get(ctx, req.NamespacedName, &b)
	if apierrors.IsNotFound(err) || err == nil && (application(&b) == nil || !b.DeletionTimestamp.IsZero()) {
		r.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	now := r.Now()
	d := Decide(&b, r.last(req.NamespacedName), now)
	r.remember(req.NamespacedName, d.UnhealthySince)
	if len(d.Evict) == 0 {
		return ctrl.Result{RequeueAfter: d.RecheckAfter}, nil
	}
	before := b.DeepCopy()
	Evict(&b.Spec, d.Evict, now)
	// The lock keeps the scheduler's newer placement from being overwritten with this older one.
	err = r.Client.Patch(ctx, &b, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	if apierrors.IsConflict(err) {
		return ctrl.Result{Requeue: true}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	ctrl.LoggerFrom(ctx).Info("application failover", "clusters", d.Evict, "purgeMode", b.Spec.Failover.Application.PurgeMode)
	if r.Recorder != nil {
		r.Recorder.Eventf(&b, nil, corev1.EventTypeWarning, ReasonApplicationFailover, "Evict",
			"left %s: the workload stayed unhealthy past the policy's tolerationSeconds", strings.Join(d.Evict, ", "))
	}
	return ctrl.Result{RequeueAfter: d.RecheckAfter}, nil
}

func (r *Reconciler) last(key types.NamespacedName) map[string]time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.since[key]
}

func (r *Reconciler) remember(key types.NamespacedName, since map[string]time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(since) == 0 {
		delete(r.since, key)
		return
	}
	r.since[key] = since
}

func (r *Reconciler) forget(key types.NamespacedName) {
	r.remember(key, nil)
}
