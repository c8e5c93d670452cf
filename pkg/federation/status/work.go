package status

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
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
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/rerun"
	"github.com/fedmesh/fedmesh/pkg/federation/member"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
)

// MemberClients hands out member cluster clients, and drops the one of a Cluster deleted; *member.Factory is one.
type MemberClients interface {
	Client(ctx context.Context, cluster string) (*member.Client, error)
	Forget(cluster string)
}

// Verdicts are conditions another stage decided on their way to an object's status (given the object's status
// conditions); *verdicts.Store is one.
type Verdicts interface {
	Subscribe(notify func(types.NamespacedName))
	Current(obj metav1.Object, written []metav1.Condition) *metav1.Condition
	Forget(key types.NamespacedName)
}

// WorkReconciler writes each Work's status: the state of its objects in its member cluster (manifestStatuses)
// and the execution stage's verdict on its last apply (the Applied condition), in one write.
type WorkReconciler struct {
	// Client reads Works and Clusters and writes Work status in the host.
	Client  client.Client
	Members MemberClients
	// Verdicts tell each Work's Applied condition, and which Works have a new one.
	Verdicts Verdicts
	// Interpreter reflects the members' statuses and judges their health; the interpreter chain.
	Interpreter interpreter.Interpreter
	// SyncPoll is how soon a Work waiting for a new member informer to sync is looked at again; default 500ms.
	SyncPoll time.Duration
	// SyncGrace is how long a Work waits for a member informer to sync before its status is written without the
	// objects of that informer (reported Unknown, with a condition naming their resources); default 5s.
	SyncGrace time.Duration
	// Coalesce is how long a member object's changes are gathered before its Work's status is written; 0 writes
	// every change.
	Coalesce time.Duration
	// Recorder records events on Works (a status script failing); nil records none.
	Recorder EventRecorder
	// MemberEdits, if set, hears of every update of the member objects watched: the execution stage, which applies
	// again what a member changed of the federation's fields. Nothing else watches the members.
	MemberEdits MemberEdits
	// LayerChanges, if set, tells of each new set of the users' interpreter layers: the Works with objects of the
	// kinds whose status or health it may interpret differently are looked at again at once. Nil leaves them to
	// their next reconcile.
	LayerChanges *rerun.Notifier

	watches *memberWatches
	wakeups *wakeups
	written written
}

// MemberEdits hears of each update of a member object fedmesh applied, as it was and as it is (without its
// managedFields), with the Work it came from; *execution.Reconciler is one. It is called from the member watches:
// it must not block.
type MemberEdits interface {
	MemberObjectUpdated(work types.NamespacedName, old, cur *unstructured.Unstructured)
}

// EventRecorder records events (k8s.io/client-go/tools/record.EventRecorder, as package eventrecord gives it,
// satisfies it).
type EventRecorder interface {
	Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any)
}

// ReasonReflectStatusFailed: a status script failed on a member's object; the status recorded last stays.
const ReasonReflectStatusFailed = "ReflectStatusFailed"

// reflectRetry is how soon a Work whose status script failed is looked at again, though its objects do not change:
// a customization fixed meanwhile then takes effect.
const reflectRetry = 30 * time.Second

// SetupWithManager registers the controller: Works that name a cluster, their objects in the members, and the
// Clusters (readiness changes restate every Work of the cluster; a deleted Cluster's watches stop, its client is
// dropped, and its Works are restated).
func (r *WorkReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Verdicts == nil {
		return errors.New("work-status: no Verdicts to take the Applied conditions from")
	}
	if r.SyncPoll == 0 {
		r.SyncPoll = 500 * time.Millisecond
	}
	if r.SyncGrace == 0 {
		r.SyncGrace = 5 * time.Second
	}
	r.watches = &memberWatches{onChange: r.memberChanged, onUpdate: r.memberUpdated}
	var err error
	if r.wakeups, err = newWakeups(mgr, r.watches.stopAll); err != nil {
		return err
	}
	// A verdict is gathered with the member's news of the same apply: both come within the coalescing window.
	r.Verdicts.Subscribe(r.wakeups.wake)
	hasCluster, err := predicate.LabelSelectorPredicate(metav1.LabelSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: names.ClusterLabel, Operator: metav1.LabelSelectorOpExists}},
	})
	if err != nil {
		return err
	}
	bldr := ctrl.NewControllerManagedBy(mgr).
		Named("work-status").
		For(&workv1alpha1.Work{}, builder.WithPredicates(hasCluster, predicate.GenerationChangedPredicate{})).
		WatchesRawSource(r.wakeups.source(r.Coalesce)).
		Watches(&clusterv1alpha1.Cluster{}, handler.Funcs{
			CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				r.enqueueWorksOf(ctx, e.Object.GetName(), q)
			},
			UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				if readinessChanged(e.ObjectOld, e.ObjectNew) {
					r.enqueueWorksOf(ctx, e.ObjectNew.GetName(), q)
				}
			},
			DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				r.watches.stop(e.Object.GetName())
				// Else kept for the life of the process: nothing asks for it again (a Cluster made again under its
				// name gets a client of its own, member.Factory keying them by UID).
				r.Members.Forget(e.Object.GetName())
				r.enqueueWorksOf(ctx, e.Object.GetName(), q)
			},
		})
	if r.LayerChanges != nil {
		bldr = bldr.WatchesRawSource(rerun.Works(r.LayerChanges, mgr.GetCache(), interpreter.InterpretStatus, interpreter.InterpretHealth))
	}
	return bldr.Complete(r)
}

func readinessChanged(old, cur client.Object) bool {
	o, ok1 := old.(*clusterv1alpha1.Cluster)
	c, ok2 := cur.(*clusterv1alpha1.Cluster)
	return !ok1 || !ok2 || clusterReady(o) != clusterReady(c)
}

// memberChanged enqueues the Works a member object came from (see memberWatches and origin).
func (r *WorkReconciler) memberChanged(_ string, _ *unstructured.Unstructured, from origin) {
	for _, work := range from.works() {
		r.wakeups.wake(work)
	}
}

// memberUpdated hands an updated member object to MemberEdits with the Works that should apply it again
// (origin.edited): one whose identity labels a member tool removed goes to the Work it came from, whose apply puts
// them back.
func (r *WorkReconciler) memberUpdated(_ string, old, cur *unstructured.Unstructured, from origin) {
	if r.MemberEdits == nil {
		return
	}
	for _, work := range from.edited(r.workExists) {
		r.MemberEdits.MemberObjectUpdated(work, old, cur)
	}
}

// workExists reports whether the Work is in the cache: called from the member watches, it must not block.
func (r *WorkReconciler) workExists(key types.NamespacedName) bool {
	err := r.Client.Get(context.Background(), key, &workv1alpha1.Work{})
	return err == nil || !apierrors.IsNotFound(err)
}

func (r *WorkReconciler) enqueueWorksOf(ctx context.Context, cluster string, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	var works workv1alpha1.WorkList
	if err := r.Client.List(ctx, &works, client.MatchingLabels{names.ClusterLabel: names.LabelValue(cluster)}); err != nil {
		log.FromContext(ctx).Error(err, "list Works of cluster", "cluster", cluster)
		return
	}
	for _, w := range works.Items {
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: w.Namespace, Name: w.Name}})
	}
}

// Reconcile restates one Work's status. Whatever keeps it from observing the member, the execution stage's
// verdict is still written: it is what tells why a Work is not applied.
func (r *WorkReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var work workv1alpha1.Work
	if err := r.Client.Get(ctx, req.NamespacedName, &work); err != nil {
		if apierrors.IsNotFound(err) {
			r.Verdicts.Forget(req.NamespacedName)
			r.written.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !work.DeletionTimestamp.IsZero() {
		r.Verdicts.Forget(req.NamespacedName)
		r.written.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	var cluster clusterv1alpha1.Cluster
	if err := r.Client.Get(ctx, types.NamespacedName{Name: work.Spec.ClusterName}, &cluster); err != nil {
		if apierrors.IsNotFound(err) {
			// Gone: what its member showed last is no more current than a not-Ready cluster's. Its watches stop here
			// too, as a pass that raced with the deletion may have started them again.
			r.watches.stop(work.Spec.ClusterName)
			return ctrl.Result{}, r.write(ctx, &work, staleStatuses(work.Status.ManifestStatuses), nil)
		}
		return ctrl.Result{}, err
	}
	if !clusterReady(&cluster) {
		// Its informers would only serve what they saw last; they start afresh, with a new list, once it is back.
		r.watches.stop(cluster.Name)
		return ctrl.Result{}, r.write(ctx, &work, staleStatuses(work.Status.ManifestStatuses), nil)
	}
	mc, err := r.Members.Client(ctx, cluster.Name)
	if err != nil {
		return ctrl.Result{}, errors.Join(err, r.write(ctx, &work, work.Status.ManifestStatuses, unsyncedShown(&work)))
	}
	obs, err := r.observe(ctx, &work, mc)
	if err != nil {
		return ctrl.Result{}, errors.Join(err, r.write(ctx, &work, work.Status.ManifestStatuses, unsyncedShown(&work)))
	}
	if len(obs.unsynced) == 0 {
		var again ctrl.Result
		if obs.reflectFailed {
			again.RequeueAfter = reflectRetry
		}
		return again, r.write(ctx, &work, obs.statuses, nil)
	}
	write, again := awaitSync(time.Since(obs.youngest), r.SyncGrace, r.SyncPoll)
	if !write {
		return ctrl.Result{RequeueAfter: again}, nil
	}
	log.FromContext(ctx).V(1).Info("member watches not synced", "resources", obs.unsynced)
	return ctrl.Result{RequeueAfter: again}, r.write(ctx, &work, obs.statuses, notSynced(obs.unsynced))
}

// observation is what observe found of a Work's objects in its member.
type observation struct {
	statuses []workv1alpha1.ManifestStatus
	// unsynced are the resources whose informers have not synced (their objects are reported Unknown), youngest
	// when the last of those started.
	unsynced []string
	youngest time.Time
	// reflectFailed: a status script failed on one of the objects, whose status recorded last was kept.
	reflectFailed bool
}

// observe reads each manifest's object from the member's informers. An object not (yet) in the member has no
// entry; one whose informer is still listing (or cannot list) has health Unknown.
func (r *WorkReconciler) observe(ctx context.Context, work *workv1alpha1.Work, mc *member.Client) (observation, error) {
	var obs observation
	out := &obs.statuses
	for i, m := range work.Spec.Workload.Manifests {
		id, err := identify(i, m, mc, work.Namespace)
		if err != nil {
			log.FromContext(ctx).V(1).Info("manifest not reported", "ordinal", i, "error", err.Error())
			continue
		}
		gvr := schema.GroupVersionResource{Group: id.Group, Version: id.Version, Resource: id.Resource}
		inf, started, err := r.watches.informer(work.Spec.ClusterName, mc, gvr)
		if err != nil {
			return observation{}, err
		}
		if !inf.HasSynced() {
			*out = append(*out, workv1alpha1.ManifestStatus{Identifier: id, Health: workv1alpha1.ResourceUnknown})
			if !slices.Contains(obs.unsynced, gvr.Resource) {
				obs.unsynced = append(obs.unsynced, gvr.Resource)
			}
			if started.After(obs.youngest) {
				obs.youngest = started
			}
			continue
		}
		key := id.Name
		if id.Namespace != "" {
			key = id.Namespace + "/" + id.Name
		}
		item, exists, err := inf.GetIndexer().GetByKey(key)
		if err != nil || !exists {
			continue
		}
		obj, ok := item.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		ms := workv1alpha1.ManifestStatus{Identifier: id}
		if r.Interpreter.Handles(obj.GroupVersionKind(), interpreter.InterpretStatus) {
			if ms.Status, err = r.Interpreter.InterpretStatus(ctx, obj); err != nil {
				// The status recorded last stays, as Karmada keeps it: a script failing on this version of the
				// object must not take the cluster out of the aggregated status.
				log.FromContext(ctx).Error(err, "interpret status; keeping the last status recorded", "object", key)
				ms.Status = lastStatus(work.Status.ManifestStatuses, id)
				obs.reflectFailed = true
				if r.Recorder != nil {
					r.Recorder.Eventf(work, corev1.EventTypeWarning, ReasonReflectStatusFailed,
						"status of %s in cluster %s: %v; the status recorded last stays", key, work.Spec.ClusterName, err)
				}
			}
		}
		if ms.Health, err = interpreter.Health(ctx, r.Interpreter, obj); err != nil {
			log.FromContext(ctx).Error(err, "interpret health", "object", key)
		}
		*out = append(*out, ms)
	}
	return obs, nil
}

// identify maps manifest ordinal to the resource it is in the member.
func identify(ordinal int, m workv1alpha1.Manifest, mc *member.Client, workNamespace string) (workv1alpha1.ResourceIdentifier, error) {
	var obj unstructured.Unstructured
	if err := obj.UnmarshalJSON(m.Raw); err != nil {
		return workv1alpha1.ResourceIdentifier{}, err
	}
	gvk := obj.GroupVersionKind()
	mapping, err := mc.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return workv1alpha1.ResourceIdentifier{}, err
	}
	id := workv1alpha1.ResourceIdentifier{
		Ordinal: int32(ordinal), Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind,
		Resource: mapping.Resource.Resource, Name: obj.GetName(),
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		id.Namespace = obj.GetNamespace()
		if id.Namespace == "" {
			id.Namespace = workNamespace
		}
	}
	if id.Name == "" {
		return id, fmt.Errorf("manifest %d has no name", ordinal)
	}
	return id, nil
}

// write sets the Work's manifestStatuses, its Applied condition (the verdict of its last apply) and unsynced (the
// member watches that have not synced; nil when all have) when any changed. The conditions go in every write,
// changed or not: a field this manager leaves out of an apply is removed.
func (r *WorkReconciler) write(ctx context.Context, work *workv1alpha1.Work, statuses []workv1alpha1.ManifestStatus, unsynced *metav1.Condition) error {
	status := workv1alpha1.WorkStatus{ManifestStatuses: statuses}
	changed := !manifestStatusesEqual(work.Status.ManifestStatuses, statuses)
	if c := r.Verdicts.Current(work, work.Status.Conditions); c != nil {
		cond, condChanged := applystatus.Condition(work.Status.Conditions, *c)
		status.Conditions = []metav1.Condition{cond}
		changed = changed || condChanged
	}
	if unsynced != nil {
		cond, condChanged := applystatus.Condition(work.Status.Conditions, *unsynced)
		status.Conditions = append(status.Conditions, cond)
		changed = changed || condChanged
	} else if meta.FindStatusCondition(work.Status.Conditions, conditionWatchesSynced) != nil {
		changed = true
	}
	// A copy from before this stage's last write says nothing of what is written now.
	if !changed && !r.written.stale(client.ObjectKeyFromObject(work), work.GetResourceVersion()) {
		return nil
	}
	rv, err := applyStatus(ctx, r.Client, work, &status)
	r.written.record(client.ObjectKeyFromObject(work), rv)
	return err
}

// conditionWatchesSynced is the Work condition naming the member watches that have not synced, shown only while
// some have not: their objects' status is unknown.
const conditionWatchesSynced = "MemberWatchesSynced"

// unsyncedShown is the condition w shows of its member watches, kept by a pass that could not look at them.
func unsyncedShown(w *workv1alpha1.Work) *metav1.Condition {
	return meta.FindStatusCondition(w.Status.Conditions, conditionWatchesSynced)
}

func notSynced(resources []string) *metav1.Condition {
	slices.Sort(resources)
	return &metav1.Condition{Type: conditionWatchesSynced, Status: metav1.ConditionFalse, Reason: "WatchNotSynced",
		Message: "the member's watch of " + strings.Join(resources, ", ") + " has not synced (can they be listed?); their objects' status is unknown"}
}

// lastStatus is the status recorded for id, nil if none.
func lastStatus(statuses []workv1alpha1.ManifestStatus, id workv1alpha1.ResourceIdentifier) *runtime.RawExtension {
	for i := range statuses {
		if statuses[i].Identifier == id {
			return statuses[i].Status
		}
	}
	return nil
}
