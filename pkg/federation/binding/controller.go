package binding

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/cachewait"
	"github.com/fedmesh/fedmesh/pkg/federation/coalesce"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/rerun"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/override"
	"github.com/fedmesh/fedmesh/pkg/federation/rendering"
	"github.com/fedmesh/fedmesh/pkg/federation/scheduler"
	"github.com/fedmesh/fedmesh/pkg/internal/shorten"
)

// EventRecorder records events on bindings (k8s.io/client-go/tools/record.EventRecorder, as package eventrecord
// gives it, satisfies it).
type EventRecorder interface {
	Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any)
}

// Renderings takes the outcome of each pass over a binding, from which the binding-status stage judges its
// FullyApplied condition as its Works are applied; it reports whether the outcome differs from the last one.
// *rendering.Store is one.
type Renderings interface {
	Set(obj metav1.Object, o rendering.Outcome) bool
}

// Reconciler renders ResourceBindings into Works.
type Reconciler struct {
	// Client reads and writes bindings, Works, override policies and Clusters.
	Client client.Client
	// Templates reads templates and their dependencies as unstructured objects: the federator passes the
	// detector's template cache, which reads what it does not cache from the API server. Nil means Client.
	Templates client.Reader
	// Interpreter revises replicas and finds dependencies; the lead passes the full chain.
	Interpreter Interpreter
	// Recorder records events on bindings; nil records none.
	Recorder EventRecorder
	// Coalesce is how long the changes of a binding's Works (edited, deleted) are gathered before the binding is
	// looked at again; 0 looks at every change.
	Coalesce time.Duration
	// Renderings takes what each pass found: the binding-status stage judges FullyApplied from it and the Works'
	// status, and writes it with the binding's aggregatedStatus.
	Renderings Renderings

	// Reader lists the Works of a binding whose rollout is paced across clusters from the API server: whose turn
	// it is must not be judged from a Work the cache shows as it was before this stage's last write. Nil means
	// the manager's API reader.
	Reader client.Reader

	// Cached waits for the cache to show a Work once created (the federator shares one among its
	// stages); nil makes one for the kinds this stage waits on.
	Cached *cachewait.Waiter

	// LayerChanges, if set, tells of each new set of the users' interpreter layers: the bindings of the kinds whose
	// replicas it may revise, or dependencies find, differently are rendered again at once. Nil leaves them to
	// their next reconcile.
	LayerChanges *rerun.Notifier

	// dependents are the dependencies each binding's last pass looked up, for their changes to bring it back.
	dependents dependents
	// dependencyRetry, if set, replaces the package's dependencyRetry (tests).
	dependencyRetry time.Duration
}

// SetupWithManager watches bindings, their Works' spec (an edit is undone, a deleted Work made again), the
// override policies (a change re-renders the bindings it may select, before and after the change), the
// Clusters' labels and spec (override rules target by them) and the dependencies the native interpreter finds
// (one created, changed or deleted re-renders the bindings whose last pass looked it up). Not the Works' status
// (applying a Work changes no other Work, and the binding-status stage judges from it whether the binding is fully
// applied), except a Work's whose cluster has a turn in a paced rollout (editedOrDeleted). Dependencies are
// watched by their metadata only: ConfigMaps and Secrets are not held in memory whole for the sake of their names,
// and a pass reads those it needs through Templates.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Renderings == nil {
		return errors.New("binding: no Renderings to hand each pass's outcome to")
	}
	if r.Templates == nil {
		r.Templates = r.Client
	}
	if r.Reader == nil {
		r.Reader = mgr.GetAPIReader()
	}
	var err error
	if r.Cached == nil {
		if r.Cached, err = cachewait.For(context.Background(), mgr.GetCache(), &workv1alpha1.Work{}); err != nil {
			return err
		}
	}
	bldr := ctrl.NewControllerManagedBy(mgr).
		Named("binding").
		// Of a binding, its spec: its status is other stages' (the scheduler's verdict, the aggregated status,
		// FullyApplied) and would only make this stage look again at nothing new.
		For(&workv1alpha1.ResourceBinding{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&workv1alpha1.Work{}, coalesce.Handler(r.Coalesce, names.BindingRequests), builder.WithPredicates(editedOrDeleted)).
		Watches(&policyv1alpha1.OverridePolicy{}, handler.EnqueueRequestsFromMapFunc(r.bindingsOfPolicy)).
		Watches(&policyv1alpha1.ClusterOverridePolicy{}, handler.EnqueueRequestsFromMapFunc(r.bindingsOfPolicy)).
		Watches(&clusterv1alpha1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.bindingsOfCluster),
			builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{})))
	for _, obj := range watchedDependencies {
		gvk, err := apiutil.GVKForObject(obj, mgr.GetScheme())
		if err != nil {
			return err
		}
		bldr = bldr.WatchesMetadata(obj, r.dependents.eventHandler(gvk.GroupKind(), r.Coalesce))
	}
	if r.LayerChanges != nil {
		bldr = bldr.WatchesRawSource(rerun.Bindings(r.LayerChanges, mgr.GetCache(), interpreter.ReviseReplica, interpreter.InterpretDependency))
	}
	return bldr.Complete(r)
}

// Reconcile brings the binding's Works up to date and hands what it found to the binding-status stage.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx)
	var b workv1alpha1.ResourceBinding
	if err := r.Client.Get(ctx, req.NamespacedName, &b); err != nil {
		if apierrors.IsNotFound(err) {
			r.dependents.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !b.DeletionTimestamp.IsZero() {
		r.dependents.forget(req.NamespacedName)
		return r.finalize(ctx, &b)
	}
	if controllerutil.AddFinalizer(&b, names.BindingFinalizer) {
		if err := r.Client.Update(ctx, &b); err != nil {
			return ctrl.Result{}, err
		}
	}
	works, err := r.works(ctx, &b)
	if err != nil {
		return ctrl.Result{}, err
	}
	o := outcome{works: map[string]*workv1alpha1.Work{}, renderErrors: map[string]error{}}
	targeted := map[string]bool{}
	for _, tc := range b.Spec.Clusters {
		targeted[tc.Name] = true
	}
	// A cluster failed over from gracefully keeps its Work, as it is, until its eviction task is done; the Work of
	// one with a task of purgeMode Directly (which keeps an application failover's cluster out of scheduling, or
	// carries state preserved from it) goes at once.
	evicting := map[string]bool{}
	for _, t := range b.Spec.GracefulEvictionTasks {
		evicting[t.FromCluster] = scheduler.KeepsCopy(t)
	}
	var untargeted []*workv1alpha1.Work
	for i := range works {
		w := &works[i]
		if !w.DeletionTimestamp.IsZero() {
			if targeted[w.Spec.ClusterName] {
				// Not the cluster's Work any more, though it still holds the name: written into, it would pass for
				// applied, then go with the workload once its finalizer is through. The cluster gets a new Work
				// once this one is gone, its deletion bringing the binding back (editedOrDeleted).
				o.deleting = append(o.deleting, w.Spec.ClusterName)
			}
			continue
		}
		if targeted[w.Spec.ClusterName] {
			o.works[w.Spec.ClusterName] = w
			continue
		}
		if !evicting[w.Spec.ClusterName] {
			untargeted = append(untargeted, w)
		}
	}
	var renderErr error
	if len(b.Spec.Clusters) > 0 {
		renderErr = r.renderAll(ctx, &b, &o)
	} else {
		r.dependents.forget(req.NamespacedName)
	}
	// A pass that failed (the dependencies not found, or any other error) has not written the target clusters'
	// Works that take over what the untargeted ones run: these keep theirs meanwhile, lest the workload shrink.
	depsFailed := errors.As(renderErr, new(dependencyInterpretError))
	kept, err := r.withdraw(ctx, &b, untargeted, renderErr != nil || takeoverUnwritten(&o), evicting)
	if err != nil {
		return ctrl.Result{}, err
	}
	if depsFailed {
		// o is whole: every target cluster's Work held back, and why. Nothing tells the binding when the
		// interpreter answers again: it is looked at again soon, not after a backoff grown over the outage.
		r.handOver(&b, o)
		logger.V(1).Info("dependencies not found; trying again", "after", cmp.Or(r.dependencyRetry, dependencyRetry), "error", renderErr.Error())
		return ctrl.Result{RequeueAfter: cmp.Or(r.dependencyRetry, dependencyRetry)}, nil
	}
	if renderErr != nil {
		return ctrl.Result{}, renderErr
	}
	if len(o.unseen) > 0 {
		// What these clusters' Works are is not known yet: the binding is looked at again once the cache has had
		// time to show them.
		logger.V(1).Info("Works exist that the cache has not shown yet", "clusters", o.unseen)
		return ctrl.Result{RequeueAfter: cachewait.StaleRecheck}, nil
	}
	r.handOver(&b, o)
	return ctrl.Result{RequeueAfter: keptRecheck(kept, r.dependencyRetry)}, nil
}

// renderAll renders and writes the Work of every target cluster, recording in o what went wrong for which cluster.
// A cluster whose Work cannot be rendered keeps its previous Work: a bad policy must not take a workload away.
// When the interpreter cannot find the template's dependencies, no Work is rendered, and the dependencyInterpretError
// returned comes with o whole (every target cluster failing with it).
func (r *Reconciler) renderAll(ctx context.Context, b *workv1alpha1.ResourceBinding, o *outcome) error {
	current, err := r.template(ctx, b)
	if apierrors.IsNotFound(err) {
		o.templateMissing = err.Error()
		r.dependents.forget(client.ObjectKeyFromObject(b))
		return nil
	}
	if err != nil {
		return err
	}
	template := stripServerFields(current)
	in := renderInput{binding: b, template: template, generation: current.GetGeneration()}
	// depsFailed is the interpreter failing to find the dependencies: no Work is rendered, though a cluster
	// leaving still loses its Work (unjoin waits for it).
	var depsFailed error
	if b.Spec.PropagateDeps {
		in.deps, o.missingDeps, err = r.dependencies(ctx, client.ObjectKeyFromObject(b), template)
		switch {
		case errors.As(err, new(dependencyInterpretError)):
			depsFailed = err
		case err != nil:
			return err
		}
	} else {
		r.dependents.forget(client.ObjectKeyFromObject(b))
	}
	if in.policies, err = r.policies(ctx, b.Spec.Resource.Namespace); err != nil {
		return err
	}
	desired := map[string]*workv1alpha1.Work{}
	for _, tc := range b.Spec.Clusters {
		if slices.Contains(o.deleting, tc.Name) {
			continue
		}
		var cluster clusterv1alpha1.Cluster
		if err := r.Client.Get(ctx, types.NamespacedName{Name: tc.Name}, &cluster); err != nil {
			if !apierrors.IsNotFound(err) {
				return err
			}
			o.renderErrors[tc.Name] = fmt.Errorf("cluster %s %w", tc.Name, errNoCluster)
			continue
		}
		if !cluster.DeletionTimestamp.IsZero() {
			// A cluster being deleted loses its Work even while it is targeted (no other cluster fits): its objects
			// are removed from the member while its credentials are still there (kubectl-fedmesh unjoin holds
			// the Cluster until its Works are gone, and deletes those this pass does not reach itself).
			o.renderErrors[tc.Name] = clusterLeavingError(tc.Name)
			if w := o.works[tc.Name]; w != nil {
				if err := r.deleteWork(ctx, b, w, "is being deleted"); err != nil {
					return err
				}
				delete(o.works, tc.Name)
			}
			continue
		}
		if depsFailed != nil {
			o.renderErrors[tc.Name] = depsFailed
			continue
		}
		if desired[tc.Name], err = render(ctx, in, r.Interpreter, tc, &cluster); err != nil {
			o.renderErrors[tc.Name] = err
			delete(desired, tc.Name)
			continue
		}
		if o.works[tc.Name] == nil {
			// A new Work: its plain name may be another binding's or cluster's Work's.
			name, err := workName(b.Name, tc.Name, r.workNamed(ctx, b.Namespace))
			if errors.Is(err, errNamesHeld) {
				o.renderErrors[tc.Name] = err
				delete(desired, tc.Name)
				continue
			}
			if err != nil {
				return err
			}
			desired[tc.Name].Name = name
		}
	}
	if depsFailed != nil {
		return depsFailed
	}
	turns, err := pace(b, template, desired, o.works)
	if err != nil {
		// Written unpaced, the Works would roll every cluster at once: they wait for the cause to be fixed.
		r.event(b, corev1.EventTypeWarning, "RolloutPaceFailed", "no Work written: %v", err)
		return err
	}
	paced := turns != nil && turns.turnsChanged(o.works)
	unpaced := turns == nil && hadTurns(o.works)
	var written []string
	var created []client.ObjectKey
	for _, tc := range b.Spec.Clusters {
		if desired[tc.Name] == nil {
			continue
		}
		isNew := o.works[tc.Name] == nil
		w, changed, err := r.write(ctx, b, o.works[tc.Name], desired[tc.Name])
		if isNew && apierrors.IsAlreadyExists(err) {
			// An earlier pass made it and the cache has not shown it yet, or another binding's Work took the name
			// since this pass picked it: not a failure, and the next pass, with the cache caught up, knows which.
			o.unseen = append(o.unseen, tc.Name)
			continue
		}
		if err != nil {
			return fmt.Errorf("write Work %s: %w", desired[tc.Name].Name, err)
		}
		if isNew {
			created = append(created, client.ObjectKeyFromObject(w))
		}
		o.works[tc.Name] = w
		if changed {
			written = append(written, tc.Name)
		}
	}
	// Works are applied and reported on at once, each queueing this binding again: a pass whose cache had not seen
	// a new Work yet would create it again. The wait follows all the creates, so that the cache's lag is waited out
	// once per binding rather than once per cluster, which would hold the later clusters' Works back by as much.
	r.Cached.CreatedAll(ctx, r.Client, created, func() client.Object { return &workv1alpha1.Work{} })
	if paced {
		// The end of a rollout is a reason of its own, for whoever watches for it.
		reason, note := "RolloutPaced", turns.summary()
		if note == "" {
			reason, note = "RolloutDone", "every cluster has rolled out"
		}
		log.FromContext(ctx).Info("rollout paced across clusters", "turns", note)
		r.event(b, corev1.EventTypeNormal, reason, "%s", note)
	}
	if unpaced {
		// Turns were under way: say why every cluster now rolls on its own.
		why := "the template is paused, or does not roll"
		if b.Spec.RolloutScope != policyv1alpha1.FederationRolloutScope {
			why = "rolloutScope is no longer Federation"
		}
		r.event(b, corev1.EventTypeNormal, "RolloutUnpaced", "the rollout is no longer paced across clusters (%s): each cluster rolls on its own", why)
	}
	if len(written) > 0 {
		log.FromContext(ctx).Info("rendered Works", "clusters", written)
		r.event(b, corev1.EventTypeNormal, "WorksRendered", "rendered the Works of %s", strings.Join(written, ", "))
	}
	return nil
}

// workNamed reads the Work of a name in namespace for workName: nil when there is none.
func (r *Reconciler) workNamed(ctx context.Context, namespace string) func(name string) (*workv1alpha1.Work, error) {
	return func(name string) (*workv1alpha1.Work, error) {
		var w workv1alpha1.Work
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &w); err != nil {
			return nil, client.IgnoreNotFound(err)
		}
		return &w, nil
	}
}

// write creates desired, or updates existing to it when something differs. It returns the Work as written (or
// existing, when nothing differed) and whether it wrote.
func (r *Reconciler) write(ctx context.Context, b *workv1alpha1.ResourceBinding, existing, desired *workv1alpha1.Work) (*workv1alpha1.Work, bool, error) {
	if existing == nil {
		if err := controllerutil.SetControllerReference(b, desired, r.Client.Scheme()); err != nil {
			return nil, false, err
		}
		// Born with the execution stage's finalizer, which that stage would otherwise add in a write of its own
		// before it applies the Work.
		controllerutil.AddFinalizer(desired, names.ExecutionFinalizer)
		if err := r.Client.Create(ctx, desired); err != nil {
			return nil, false, err
		}
		return desired, true, nil
	}
	w := existing.DeepCopy()
	changed, err := merge(w, desired)
	if err != nil {
		return nil, false, err
	}
	if !metav1.IsControlledBy(w, b) {
		if err := controllerutil.SetControllerReference(b, w, r.Client.Scheme()); err != nil {
			return nil, false, err
		}
		changed = true
	}
	if !changed {
		return existing, false, nil
	}
	if err := r.Client.Update(ctx, w); err != nil {
		return nil, false, err
	}
	return w, true, nil
}

// finalize deletes the binding's Works and, once they are gone (the execution controller's finalizer holds each
// until its objects left the member), lets the binding go.
func (r *Reconciler) finalize(ctx context.Context, b *workv1alpha1.ResourceBinding) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(b, names.BindingFinalizer) {
		return ctrl.Result{}, nil
	}
	works, err := r.works(ctx, b)
	if err != nil {
		return ctrl.Result{}, err
	}
	for i := range works {
		if works[i].DeletionTimestamp.IsZero() {
			// The binding's last word on preservation wins (e.g. the detector sets it when a policy lets go of a
			// template): the Works may not have been re-rendered since.
			if w := &works[i]; !equalBool(w.Spec.PreserveResourcesOnDeletion, b.Spec.PreserveResourcesOnDeletion) {
				w.Spec.PreserveResourcesOnDeletion = b.Spec.PreserveResourcesOnDeletion
				if err := r.Client.Update(ctx, w); client.IgnoreNotFound(err) != nil {
					return ctrl.Result{}, err
				}
			}
			if err := r.Client.Delete(ctx, &works[i]); client.IgnoreNotFound(err) != nil {
				return ctrl.Result{}, err
			}
		}
	}
	if len(works) > 0 {
		// The Works' deletion events bring the binding back; the requeue is a backstop.
		return ctrl.Result{RequeueAfter: 10 * time.Second}, nil
	}
	controllerutil.RemoveFinalizer(b, names.BindingFinalizer)
	return ctrl.Result{}, client.IgnoreNotFound(r.Client.Update(ctx, b))
}

// works lists the binding's Works (from the API server when its rollout is paced: see Reader): those labelled as
// its that no other binding controls (ownedBy), whatever their names.
func (r *Reconciler) works(ctx context.Context, b *workv1alpha1.ResourceBinding) ([]workv1alpha1.Work, error) {
	var list workv1alpha1.WorkList
	reader := client.Reader(r.Client)
	if b.Spec.RolloutScope == policyv1alpha1.FederationRolloutScope {
		reader = r.Reader
	}
	if err := reader.List(ctx, &list, client.InNamespace(b.Namespace), client.MatchingLabels{names.BindingLabel: names.LabelValue(b.Name)}); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(list.Items, func(w workv1alpha1.Work) bool { return !ownedBy(&w, b.Name) }), nil
}

// template reads the binding's template, as the API server has it. A template replaced by another of the same
// name (another UID) counts as not found: this binding is about the old one.
func (r *Reconciler) template(ctx context.Context, b *workv1alpha1.ResourceBinding) (*unstructured.Unstructured, error) {
	ref := b.Spec.Resource
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(ref.APIVersion)
	obj.SetKind(ref.Kind)
	if err := r.Templates.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, obj); err != nil {
		return nil, fmt.Errorf("template %s %s/%s: %w", ref.Kind, ref.Namespace, ref.Name, err)
	}
	if ref.UID != "" && obj.GetUID() != ref.UID {
		gr := obj.GroupVersionKind().GroupVersion().WithResource(strings.ToLower(ref.Kind)).GroupResource()
		return nil, fmt.Errorf("template %s %s/%s was replaced: %w", ref.Kind, ref.Namespace, ref.Name, apierrors.NewNotFound(gr, ref.Name))
	}
	return obj, nil
}

// policies lists the override policies that may apply to a template of namespace ("" for a cluster-scoped one,
// which only ClusterOverridePolicies select), leaving out those being deleted.
func (r *Reconciler) policies(ctx context.Context, namespace string) (override.Policies, error) {
	var cops policyv1alpha1.ClusterOverridePolicyList
	if err := r.Client.List(ctx, &cops); err != nil {
		return override.Policies{}, err
	}
	var ops policyv1alpha1.OverridePolicyList
	if namespace != "" { // a cluster-scoped template has only ClusterOverridePolicies
		if err := r.Client.List(ctx, &ops, client.InNamespace(namespace)); err != nil {
			return override.Policies{}, err
		}
	}
	var ps override.Policies
	for _, p := range cops.Items {
		if p.DeletionTimestamp.IsZero() {
			ps.Cluster = append(ps.Cluster, p)
		}
	}
	for _, p := range ops.Items {
		if p.DeletionTimestamp.IsZero() {
			ps.Namespaced = append(ps.Namespaced, p)
		}
	}
	return ps, nil
}

// handOver gives the binding-status stage the outcome of this pass over b when it differs from the last. A new
// problem rendering is also an event (a binding without clusters is not: the scheduler tells why). One b's
// FullyApplied already tells of is not new: the last outcome is held in memory only, and after a restart every
// standing problem would otherwise be told again.
func (r *Reconciler) handOver(b *workv1alpha1.ResourceBinding, o outcome) {
	out := o.rendered(b)
	if !r.Renderings.Set(b, out) {
		return
	}
	if reason, msg := out.Problem(b); reason != "" && reason != rendering.ReasonNotScheduled && !problemShown(b, reason, msg) {
		r.event(b, corev1.EventTypeWarning, reason, "%s", shorten.To(msg, shorten.EventNote))
	}
}

func (r *Reconciler) event(b *workv1alpha1.ResourceBinding, eventType, reason, note string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(b, eventType, reason, note, args...)
	}
}

// bindingsOfPolicy enqueues the bindings an override policy may select: those in its namespace (any, for a
// ClusterOverridePolicy) whose template's kind (and name, where the selector names one) it selects, or the kind
// (and name) of a dependency their last pass rendered into their Works, which is overridden too. Label selectors
// are not checked here: the template's labels are not on the binding, so such bindings are all enqueued.
func (r *Reconciler) bindingsOfPolicy(ctx context.Context, obj client.Object) []reconcile.Request {
	var spec *policyv1alpha1.OverrideSpec
	switch p := obj.(type) {
	case *policyv1alpha1.OverridePolicy:
		spec = &p.Spec
	case *policyv1alpha1.ClusterOverridePolicy:
		spec = &p.Spec
	default:
		return nil
	}
	var list workv1alpha1.ResourceBindingList
	if err := r.Client.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
		log.FromContext(ctx).Error(err, "list bindings for an override policy", "policy", obj.GetName())
		return nil
	}
	var out []reconcile.Request
	for _, b := range list.Items {
		if mayBeSelected(spec.ResourceSelectors, obj.GetNamespace(), b.Spec.Resource) ||
			dependencyMayBeSelected(spec.ResourceSelectors, obj.GetNamespace(), r.dependents.recordedOf(client.ObjectKeyFromObject(&b))) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&b)})
		}
	}
	return out
}

// mayBeSelected reports whether selectors could pick the template ref, judging by what the binding knows of it.
func mayBeSelected(selectors []policyv1alpha1.ResourceSelector, policyNamespace string, ref workv1alpha1.ObjectReference) bool {
	if len(selectors) == 0 {
		return true
	}
	for _, s := range selectors {
		ns := s.Namespace
		if ns == "" {
			ns = policyNamespace
		}
		if s.APIVersion == ref.APIVersion && s.Kind == ref.Kind && (ns == "" || ns == ref.Namespace) && (s.Name == "" || s.Name == ref.Name) {
			return true
		}
	}
	return false
}

// bindingsOfCluster enqueues the bindings that target a cluster.
func (r *Reconciler) bindingsOfCluster(ctx context.Context, obj client.Object) []reconcile.Request {
	var list workv1alpha1.ResourceBindingList
	if err := r.Client.List(ctx, &list); err != nil {
		log.FromContext(ctx).Error(err, "list bindings for a cluster", "cluster", obj.GetName())
		return nil
	}
	var out []reconcile.Request
	for _, b := range list.Items {
		for _, tc := range b.Spec.Clusters {
			if tc.Name == obj.GetName() {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&b)})
				break
			}
		}
	}
	return out
}

func equalBool(a, b *bool) bool {
	return (a != nil && *a) == (b != nil && *b)
}
