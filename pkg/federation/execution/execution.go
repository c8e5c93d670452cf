package execution

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/rerun"
	"github.com/fedmesh/fedmesh/pkg/federation/member"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/internal/shorten"
)

// MemberClients hands out member cluster clients; *member.Factory is one.
type MemberClients interface {
	Client(ctx context.Context, cluster string) (*member.Client, error)
}

// Retainer keeps member-owned fields of observed in desired; the interpreter chain is one. An interpreter that
// does not handle a kind (interpreter.ErrUnsupported) retains nothing.
type Retainer interface {
	Retain(ctx context.Context, desired, observed *unstructured.Unstructured) (*unstructured.Unstructured, error)
}

// Verdicts hands each apply's Applied condition to the stage that writes the Work's status, and tells the
// condition a Work's last apply earned (given the Work's status conditions); *verdicts.Store is one.
type Verdicts interface {
	Set(obj metav1.Object, written []metav1.Condition, cond metav1.Condition)
	Current(obj metav1.Object, written []metav1.Condition) *metav1.Condition
}

// Reconciler applies Works to their member clusters.
type Reconciler struct {
	// Client reads and writes Works, and reads ResourceBindings and Clusters, in the host.
	Client client.Client
	// APIReader reads Works past the cache, when a record meets a newer Work; SetupWithManager sets the manager's.
	APIReader client.Reader
	Members   MemberClients
	Retainer  Retainer
	// Verdicts takes the Applied condition of each pass over a Work: the work-status stage writes it with the
	// member objects' status, in one write of the Work.
	Verdicts Verdicts
	Recorder record.EventRecorder
	// Timeout bounds the member calls of one reconcile, so a member that hangs does not hold a worker; default 30s.
	Timeout time.Duration
	// ConflictRecheck is how often a Work stopped by a conflict looks again (the object may have been removed);
	// default 1m.
	ConflictRecheck time.Duration
	// LayerChanges, if set, tells of each new set of the users' interpreter layers: the Works with objects of the
	// kinds whose member fields it may retain differently are applied again at once. Nil leaves them to their next
	// reconcile.
	LayerChanges *rerun.Notifier

	edits memberEdits
	waits cleanupWaits
}

// SetupWithManager registers the controller: Works that name a cluster, the ResourceBindings whose
// conflictResolution they follow, and the member objects' edits the work-status stage hears of
// (MemberObjectUpdated).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Verdicts == nil {
		return errors.New("execution: no Verdicts to hand the Applied conditions to")
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Timeout == 0 {
		r.Timeout = 30 * time.Second
	}
	if r.ConflictRecheck == 0 {
		r.ConflictRecheck = time.Minute
	}
	hasCluster, err := predicate.LabelSelectorPredicate(metav1.LabelSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: names.ClusterLabel, Operator: metav1.LabelSelectorOpExists}},
	})
	if err != nil {
		return err
	}
	// Status writes (the status controller's manifestStatuses, our own condition) change neither the generation
	// nor the deletion timestamp, and need no new apply, unless they tell of an object gone from the member, or of
	// one that finished, to be recorded before it goes.
	specDeletionOrMissing := predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return !e.ObjectNew.GetDeletionTimestamp().Equal(e.ObjectOld.GetDeletionTimestamp())
		},
	}, objectMissing, objectFinished)
	bldr := ctrl.NewControllerManagedBy(mgr).
		Named("execution").
		For(&workv1alpha1.Work{}, builder.WithPredicates(hasCluster, specDeletionOrMissing)).
		Watches(&workv1alpha1.ResourceBinding{}, handler.EnqueueRequestsFromMapFunc(r.worksOfBinding),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&clusterv1alpha1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.worksOfCluster),
			builder.WithPredicates(clusterCameOrWent)).
		WatchesRawSource(r.edits.source())
	if r.LayerChanges != nil {
		bldr = bldr.WatchesRawSource(rerun.Works(r.LayerChanges, mgr.GetCache(), interpreter.Retain))
	}
	return bldr.Complete(r)
}

// objectMissing passes a Work applied in full whose status lacks one of its objects (missingInMember): the
// work-status stage, which watches the members, does not find it there. It is applied again, as spec flows down.
// The Work's status is what is looked at, not the member's delete event: it also tells of an object deleted
// before that stage ever saw it. An apply that finds the object there writes nothing, and one that puts it back
// does not change the Work's status until the object shows: neither can wake the Work again by itself.
var objectMissing = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		w, ok := e.ObjectNew.(*workv1alpha1.Work)
		return ok && missingInMember(w)
	},
}

// objectFinished passes a Work whose status shows an object finished (a Job Complete or Failed) that its record
// of finished objects does not hold yet: the pass records it, so the object is not applied again once the member
// cleans it up (FinishedAnnotation).
var objectFinished = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		w, ok := e.ObjectNew.(*workv1alpha1.Work)
		return ok && finishedUnrecorded(w)
	},
}

// clusterCameOrWent passes a Cluster that appeared, turned Ready, is being deleted, went, or changed its sync mode:
// its Works need not wait out their backoff to be applied, or to let go of a cluster that is gone or in Pull
// mode. It is all that brings back a Work whose apply or cleanup waits for its Cluster to be Ready.
var clusterCameOrWent = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*clusterv1alpha1.Cluster)
		c, ok2 := e.ObjectNew.(*clusterv1alpha1.Cluster)
		if !ok1 || !ok2 {
			return false
		}
		return (ready(c) && !ready(o)) || (!c.DeletionTimestamp.IsZero() && o.DeletionTimestamp.IsZero()) ||
			c.Spec.SyncMode != o.Spec.SyncMode
	},
}

func ready(c *clusterv1alpha1.Cluster) bool {
	return meta.IsStatusConditionTrue(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
}

func (r *Reconciler) worksOfCluster(ctx context.Context, obj client.Object) []reconcile.Request {
	var works workv1alpha1.WorkList
	if err := r.Client.List(ctx, &works, client.MatchingLabels{names.ClusterLabel: names.LabelValue(obj.GetName())}); err != nil {
		log.FromContext(ctx).Error(err, "list Works of cluster", "cluster", obj.GetName())
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(works.Items))
	for _, w := range works.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: w.Namespace, Name: w.Name}})
	}
	return reqs
}

func (r *Reconciler) worksOfBinding(ctx context.Context, obj client.Object) []reconcile.Request {
	var works workv1alpha1.WorkList
	if err := r.Client.List(ctx, &works, client.InNamespace(obj.GetNamespace()),
		client.MatchingLabels{names.BindingLabel: names.LabelValue(obj.GetName())}); err != nil {
		log.FromContext(ctx).Error(err, "list Works of binding", "binding", obj.GetName())
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(works.Items))
	for _, w := range works.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: w.Namespace, Name: w.Name}})
	}
	return reqs
}

// Reconcile applies one Work, or removes its objects when it is being deleted.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var work workv1alpha1.Work
	if err := r.Client.Get(ctx, req.NamespacedName, &work); err != nil {
		if apierrors.IsNotFound(err) {
			r.waits.end(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	if !work.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, &work)
	}
	if !controllerutil.ContainsFinalizer(&work, names.ExecutionFinalizer) {
		// A Work of a Pull cluster is not held: nothing of it reaches the cluster, so its deletion has nothing to
		// wait for. Nor is it applied unheld, should the Cluster turn Push meanwhile: the next pass holds it first.
		pull, err := r.pullMode(ctx, work.Spec.ClusterName)
		if err != nil {
			return ctrl.Result{}, err
		}
		if pull {
			if ptr.Deref(work.Spec.SuspendDispatching, false) {
				return ctrl.Result{}, nil
			}
			return r.conclude(&work, []error{unreachable(pullModeError(work.Spec.ClusterName))})
		}
		patch := client.MergeFromWithOptions(work.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.AddFinalizer(&work, names.ExecutionFinalizer)
		if err := r.Client.Patch(ctx, &work, patch); err != nil {
			return ctrl.Result{}, err
		}
	}
	if ptr.Deref(work.Spec.SuspendDispatching, false) {
		log.FromContext(ctx).V(1).Info("dispatching suspended; member left as it is")
		return ctrl.Result{}, nil
	}

	// A cluster not Ready is not tried: a member that froze would hold a worker for each of its Works.
	notReady, err := r.notReadyOf(ctx, work.Spec.ClusterName)
	if err != nil {
		return ctrl.Result{}, err
	}
	if notReady != nil {
		return r.awaitReady(&work, notReady)
	}
	errs, err := r.applyWork(ctx, &work)
	if err != nil {
		return ctrl.Result{}, err
	}
	return r.conclude(&work, errs)
}

// conclude hands the Applied condition of a pass with errs (one per manifest and removal) to the work-status
// stage, and says when to look at the Work again.
func (r *Reconciler) conclude(work *workv1alpha1.Work, errs []error) (ctrl.Result, error) {
	cond := appliedCondition(errs, work.Generation)
	r.Verdicts.Set(work, work.Status.Conditions, cond)
	if cond.Status == metav1.ConditionTrue {
		return ctrl.Result{}, nil
	}
	r.Recorder.Eventf(work, corev1.EventTypeWarning, cond.Reason, "%s", shorten.To(cond.Message, shorten.EventNote))
	if cond.Reason == ReasonClusterNotReady {
		return ctrl.Result{}, nil // the Cluster turning Ready brings it back (clusterCameOrWent)
	}
	for _, e := range errs {
		if e != nil && retryable(e) {
			// The error goes to controller-runtime for its backoff; the condition already tells users.
			return ctrl.Result{}, errors.New(cond.Message)
		}
	}
	return ctrl.Result{RequeueAfter: r.ConflictRecheck}, nil
}

// conflictResolution is the one of the Work's ResourceBinding; Abort when there is none.
func (r *Reconciler) conflictResolution(ctx context.Context, work *workv1alpha1.Work) (policyv1alpha1.ConflictResolution, error) {
	name := names.BindingOf(work)
	if name == "" {
		return policyv1alpha1.ConflictAbort, nil
	}
	var rb workv1alpha1.ResourceBinding
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: work.Namespace, Name: name}, &rb); err != nil {
		if apierrors.IsNotFound(err) {
			return policyv1alpha1.ConflictAbort, nil
		}
		return "", err
	}
	if rb.Spec.ConflictResolution == policyv1alpha1.ConflictOverwrite {
		return policyv1alpha1.ConflictOverwrite, nil
	}
	return policyv1alpha1.ConflictAbort, nil
}
