package eviction

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/scheduler"
)

// ReasonEvictionDone is the event on a binding whose eviction task on a cluster it left is done.
const ReasonEvictionDone = "GracefulEvictionDone"

// EventRecorder records events on bindings (package eventrecord gives one).
type EventRecorder interface {
	Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any)
}

// Reconciler removes the eviction tasks that are done from bindings.
type Reconciler struct {
	// Client reads bindings (cached) and writes their spec; the manager's when nil.
	Client client.Client
	// Recorder records an event for each task done; nil records none.
	Recorder EventRecorder
	// Timeout is how long a task without a grace period of its own waits; 0 means DefaultTimeout.
	Timeout time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// SetupWithManager watches the bindings that have eviction tasks: their status (the substitute's health) and
// spec (new tasks).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Timeout == 0 {
		r.Timeout = DefaultTimeout
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	hasTasks := predicate.NewPredicateFuncs(func(obj client.Object) bool {
		b, ok := obj.(*workv1alpha1.ResourceBinding)
		return ok && len(b.Spec.GracefulEvictionTasks) > 0
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("eviction").
		For(&workv1alpha1.ResourceBinding{}, builder.WithPredicates(hasTasks, predicate.Funcs{
			DeleteFunc: func(event.DeleteEvent) bool { return false },
		})).
		Complete(r)
}

// Reconcile removes the binding's tasks that are done and comes back when the next grace period ends.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var b workv1alpha1.ResourceBinding
	if err := r.Client.Get(ctx, req.NamespacedName, &b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if len(b.Spec.GracefulEvictionTasks) == 0 || !b.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	v := Assess(&b, r.Now(), r.Timeout)
	if !v.Changed {
		return ctrl.Result{RequeueAfter: v.RecheckAfter}, nil
	}
	before := b.DeepCopy()
	b.Spec.GracefulEvictionTasks = v.Keep
	// The lock keeps a task the scheduler added since the read from being dropped with the rest.
	err := r.Client.Patch(ctx, &b, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	if apierrors.IsConflict(err) {
		// Another stage wrote the binding since it was read; its event brings the binding back.
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	clusters := make([]string, 0, len(v.Done))
	for c := range v.Done {
		clusters = append(clusters, c)
	}
	slices.Sort(clusters)
	for _, c := range clusters {
		evictionsDone.WithLabelValues(outcomes[v.Done[c]]).Inc()
		ctrl.LoggerFrom(ctx).Info("graceful eviction done", "cluster", c, "why", v.Done[c])
		if r.Recorder != nil {
			r.Recorder.Eventf(&b, corev1.EventTypeNormal, ReasonEvictionDone, "%s: %s", doneNote(before, c), v.Done[c])
		}
	}
	return ctrl.Result{RequeueAfter: v.RecheckAfter}, nil
}

// doneNote says what the end of cluster's task means: its copy goes, or (purgeMode Directly, whose copy went when
// the workload left) the cluster is a candidate again (application failover's task kept it out) or the state
// preserved from it is no longer given to the new copy.
func doneNote(b *workv1alpha1.ResourceBinding, cluster string) string {
	for _, t := range b.Spec.GracefulEvictionTasks {
		if t.FromCluster == cluster && !scheduler.KeepsCopy(t) {
			if t.Reason == scheduler.ApplicationFailureReason {
				return fmt.Sprintf("%s is a candidate again", cluster)
			}
			return fmt.Sprintf("the state preserved from %s is no longer given to the new copy", cluster)
		}
	}
	return fmt.Sprintf("the copy on %s goes", cluster)
}
