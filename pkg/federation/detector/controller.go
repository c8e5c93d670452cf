package detector

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/cachewait"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/rerun"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/templates"
)

// Elector tells whether this federator is the one, among all shards, that handles cluster-scoped templates
// (elect.Elector is one): every shard sees them, but their bindings live in the system namespace, which only one
// shard may write.
type Elector interface {
	Elected() bool
	// OnElected registers a call made every time this federator is elected.
	OnElected(func())
}

// ReplicaInterpreter finds a template's replicas and what each replica needs.
type ReplicaInterpreter interface {
	Handles(gvk schema.GroupVersionKind, op interpreter.Operation) bool
	InterpretReplica(ctx context.Context, obj *unstructured.Unstructured) (int32, *workv1alpha1.ReplicaRequirements, error)
}

// Event reasons.
const (
	ReasonClaimed          = "Claimed"
	ReasonReleased         = "Released"
	ReasonInterpretFailed  = "InterpretReplicaFailed"
	ReasonBindingNameTaken = "BindingNameTaken"
	ReasonUnknownKind      = "UnknownKind"
	ReasonIgnoredKind      = "IgnoredKind"
)

const (
	policiesControllerName  = "detector-policies"
	templatesControllerName = "detector-templates"
	defaultUnknownKindRetry = 30 * time.Second
	// terminatingBindingRecheck is how soon a template whose binding is still being deleted is looked at again.
	terminatingBindingRecheck = time.Second
)

// Reconciler claims templates for their policies and keeps their bindings. It runs two controllers: one per
// policy, which keeps an informer running for every selected kind and requeues the templates a policy change may
// move, and one per template, which claims it and writes its binding.
type Reconciler struct {
	// Client reads policies and bindings (cached) and writes bindings on the host.
	Client client.Client
	// Dynamic patches templates (their claim labels); made from the manager's config when nil.
	Dynamic dynamic.Interface
	// Templates runs an informer for every kind some policy selects and reads templates from them; the binding
	// and status stages share it. Made from Dynamic and the manager's API reader when nil.
	Templates *templates.Cache
	// Mapper resolves the selected kinds to resources; the manager's when nil.
	Mapper meta.RESTMapper
	// APIReader reads policies from the API server, uncached, to confirm a verdict that takes a template from the
	// policy holding it (holderLossConfirmed), and a template and its namespace, to tell a release from a deletion
	// (templateGoing); the manager's when nil.
	APIReader client.Reader
	// Interpreter finds replicas and replica requirements.
	Interpreter ReplicaInterpreter
	// Recorder records events on templates and policies; required.
	Recorder record.EventRecorder
	// ClusterScoped elects the federator that handles cluster-scoped templates; nil handles them here.
	ClusterScoped Elector
	// UnknownKindRetry is how soon a policy selecting a kind the API server does not serve is looked at again
	// (its CRD may be installed later); default 30s.
	UnknownKindRetry time.Duration
	// ReleaseGrace is how long a template no policy selects any more keeps its claim and binding before it is
	// released; DefaultReleaseGrace when zero, none when negative.
	ReleaseGrace time.Duration
	// LayerChanges, if set, tells of each new set of the users' interpreter layers: the templates of the kinds
	// whose replicas it may find differently are looked at again at once. Nil leaves them to their next reconcile.
	LayerChanges *rerun.Notifier

	queue *templateQueue
	log   logr.Logger
	// releases are the ends of the graces of templates waiting for their release.
	releases releaseDeadlines
	// waiting are the templates waiting for a policy's dependentOverrides, queued again by its changes.
	waiting waitingTemplates
	now     func() time.Time
	// Cached waits for the cache to show a binding once created (the federator shares one among its
	// stages); nil makes one for the kinds this stage waits on.
	Cached *cachewait.Waiter
}

// SetupWithManager registers the reconciler's controllers and informers with mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Interpreter == nil {
		return errors.New("detector: Interpreter is required")
	}
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Mapper == nil {
		r.Mapper = mgr.GetRESTMapper()
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Recorder == nil {
		return errors.New("detector: no Recorder")
	}
	var err error
	if r.Cached == nil {
		if r.Cached, err = cachewait.For(context.Background(), mgr.GetCache(), &workv1alpha1.ResourceBinding{}); err != nil {
			return err
		}
	}
	if r.UnknownKindRetry == 0 {
		r.UnknownKindRetry = defaultUnknownKindRetry
	}
	if r.ReleaseGrace == 0 {
		r.ReleaseGrace = DefaultReleaseGrace
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.Dynamic == nil {
		d, err := dynamic.NewForConfig(mgr.GetConfig())
		if err != nil {
			return err
		}
		r.Dynamic = d
	}
	if r.Templates == nil {
		r.Templates = templates.New(r.Dynamic, mgr.GetAPIReader())
		if err := mgr.Add(r.Templates); err != nil {
			return err
		}
	}
	r.queue = &templateQueue{canonical: r.Templates.Canonical}
	r.Templates.OnChange(r.queue.add)
	if r.LayerChanges != nil {
		r.LayerChanges.Subscribe(r.requeueInterpreted)
	}
	r.log = mgr.GetLogger().WithValues("controller", templatesControllerName)
	if r.ClusterScoped != nil {
		r.ClusterScoped.OnElected(func() { r.takeUpClusterScoped(mgr.GetCache()) })
	}
	// One policy at a time: each reconcile lists every policy and sets the running informers from the list, so
	// two at once could leave the informers of the older list running.
	err = ctrl.NewControllerManagedBy(mgr).Named(policiesControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		For(&policyv1alpha1.PropagationPolicy{}).
		Watches(&policyv1alpha1.ClusterPropagationPolicy{}, &handler.EnqueueRequestForObject{}).
		Watches(&schedulingv1.PriorityClass{}, handler.EnqueueRequestsFromMapFunc(r.policiesNaming)).
		Watches(&policyv1alpha1.OverridePolicy{}, handler.EnqueueRequestsFromMapFunc(r.policiesDependingOn)).
		Watches(&policyv1alpha1.ClusterOverridePolicy{}, handler.EnqueueRequestsFromMapFunc(r.policiesDependingOn)).
		Complete(reconcile.Func(r.reconcilePolicy))
	if err != nil {
		return err
	}
	// A binding deleted behind the detector's back is made again; other binding changes are other stages' work,
	// but for the bindings that appear (queuesOnCreate).
	onlyDeletes := builder.WithPredicates(predicate.Funcs{
		CreateFunc:  r.queuesOnCreate,
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	})
	return builder.TypedControllerManagedBy[templates.Key](mgr).Named(templatesControllerName).
		WatchesRawSource(r.queue).
		Watches(&workv1alpha1.ResourceBinding{}, handler.TypedEnqueueRequestsFromMapFunc(r.bindingTemplateKeys), onlyDeletes).
		WithLogConstructor(func(k *templates.Key) logr.Logger {
			if k == nil {
				return r.log
			}
			return r.log.WithValues("kind", k.GVK.Kind, "namespace", k.Namespace, "name", k.Name)
		}).
		Complete(reconcile.TypedFunc[templates.Key](r.reconcileTemplate))
}

// queuesOnCreate reports whether a binding's appearance queues its template. At start, each binding's template
// is looked at once: a policy deleted while no detector ran left claims that no event will ever bring back (for a
// kind no live policy selects, no informer even lists the templates). Later, so is the template of a binding when
// the informers do not show that template: a shard given a namespace sees the namespace's bindings arrive as
// creates, and a template deleted while its namespace moved, or while its shard was down, left no event for the
// informers of the shard that now owns it. The reconcile reads a template the informers do not show from the API
// server (Templates.Template), so one they have not listed yet is not taken for gone. The detector's own bindings
// are of templates the informers show, and queue nothing. The template of every binding that appears in the system
// namespace is queued: a shard given that namespace may be elected to handle cluster-scoped templates just then.
func (r *Reconciler) queuesOnCreate(e event.CreateEvent) bool {
	if e.IsInInitialList || e.Object.GetNamespace() == names.SystemNamespace {
		return true
	}
	for _, k := range r.bindingTemplateKeys(context.Background(), e.Object) {
		if !r.Templates.Holds(k) {
			return true
		}
	}
	return false
}

// takeUpClusterScoped queues every cluster-scoped template, once this federator is elected to handle them: those
// in the informers and those the bindings in the system namespace name (a template deleted while no federator
// was elected has only its binding left). Passes skipped while another federator was elected are done now.
func (r *Reconciler) takeUpClusterScoped(reader client.Reader) {
	for _, k := range r.Templates.Keys(func(u *unstructured.Unstructured) bool { return u.GetNamespace() == "" }) {
		r.queue.add(k)
	}
	// The Lease was won while this shard owned the system namespace, so its cache shows the bindings there, or
	// will, with an event that queues their templates (see SetupWithManager).
	var rbs workv1alpha1.ResourceBindingList
	if err := reader.List(context.Background(), &rbs, client.InNamespace(names.SystemNamespace)); err != nil {
		r.log.Error(err, "listing the bindings of cluster-scoped templates")
		return
	}
	for i := range rbs.Items {
		for _, k := range bindingTemplate(context.Background(), &rbs.Items[i]) {
			if k.Namespace == "" {
				r.queue.add(k)
			}
		}
	}
}

// requeueInterpreted queues the templates in the informers whose replicas a, a change of a users' interpreter
// layer, may find otherwise.
func (r *Reconciler) requeueInterpreted(a interpreter.Affected) {
	for _, k := range r.Templates.Keys(func(u *unstructured.Unstructured) bool {
		return a.Matches(u.GroupVersionKind().GroupKind(), interpreter.InterpretReplica)
	}) {
		r.queue.add(k)
	}
}

// WatchedKinds lists the template kinds the detector runs an informer for, those some policy selects, each in the
// one version it is watched in.
func (r *Reconciler) WatchedKinds() []schema.GroupVersionKind {
	return r.Templates.Kinds()
}

// reconcileTemplate claims the template for the policy that wins it and writes its binding, deletes its binding
// when it is gone, or releases it after a grace when no policy selects it (releaseOrWait).
func (r *Reconciler) reconcileTemplate(ctx context.Context, key templates.Key) (reconcile.Result, error) {
	// Keys are made canonical when queued; again here, for an informer since restarted in another version, so that
	// reads hit the informer.
	key = r.Templates.Canonical(key)
	if key.Namespace == "" && r.ClusterScoped != nil && !r.ClusterScoped.Elected() {
		// Another federator handles it; this one takes it up if elected (takeUpClusterScoped), with a grace anew.
		r.releases.forget(key)
		r.waiting.forget(key)
		return reconcile.Result{}, nil
	}
	obj, err := r.Templates.Template(ctx, key)
	if err != nil {
		return reconcile.Result{}, err
	}
	if obj == nil || obj.GetDeletionTimestamp() != nil {
		r.releases.forget(key)
		r.waiting.forget(key)
		return reconcile.Result{}, r.deleteBinding(ctx, key, false)
	}
	candidates, err := r.candidates(ctx, r.Client, obj.GetNamespace())
	if err != nil {
		return reconcile.Result{}, err
	}
	policy, ok := Choose(obj, candidates)
	holderLost := HolderLost(obj, candidates)
	if holderLost {
		confirmed, err := r.holderLossConfirmed(ctx, obj, policy, ok)
		if err != nil {
			return reconcile.Result{}, err
		}
		if !confirmed {
			// The policy's event queues the template again once the cache shows it; the recheck covers a cache
			// that shows it already but missed the event.
			return reconcile.Result{RequeueAfter: cachewait.StaleRecheck}, nil
		}
	}
	if !ok {
		r.waiting.forget(key)
		return r.releaseOrWait(ctx, key, obj)
	}
	// A policy takes effect once the overrides it depends on exist (dependentOverrides); their creation queues the
	// template again (policiesDependingOn), and so does any other change of the policy (requeueTemplates).
	waiting := policy
	policy, act, missing, err := r.inEffect(ctx, obj, candidates, policy)
	if err != nil {
		return reconcile.Result{}, err
	}
	tellMissing := func() {
		r.Recorder.Eventf(obj, corev1.EventTypeWarning, ReasonDependentOverridesMissing,
			"%s waits for the overrides it depends on: %s", waiting, strings.Join(missing, ", "))
	}
	if act == actWait {
		r.releases.forget(key) // a policy selects it again: the release it waited for is off
		// Told once per wait and whenever what is missing changes, not at every recheck of the same wait.
		news, err := r.waitFor(ctx, key, policy, missing)
		if news {
			tellMissing()
		}
		if err != nil {
			return reconcile.Result{}, err
		}
		if holderLost {
			// Claimed by a policy that is gone or selects it no more: a missed change of the policy it waits for
			// would leave it so for good.
			return reconcile.Result{RequeueAfter: holderLostRecheck}, nil
		}
		return reconcile.Result{}, nil
	}
	if len(missing) > 0 { // claimed meanwhile by a policy ranked below, which is ready
		tellMissing()
	}
	// Selected (again): a release it waited for is off, and so is the wait for a policy.
	r.releases.forget(key)
	r.waiting.forget(key)
	if obj, err = r.inVersion(ctx, obj, policy.PropagatedVersion(obj)); err != nil {
		return reconcile.Result{}, err
	}
	if obj, err = r.claim(ctx, obj, policy); err != nil {
		return reconcile.Result{}, err
	}
	var replicas int32
	var req *workv1alpha1.ReplicaRequirements
	if r.Interpreter.Handles(obj.GroupVersionKind(), interpreter.InterpretReplica) {
		if replicas, req, err = r.Interpreter.InterpretReplica(ctx, obj); err != nil {
			r.Recorder.Eventf(obj, corev1.EventTypeWarning, ReasonInterpretFailed, "finding the replicas: %v", err)
			return reconcile.Result{}, err
		}
	}
	desired := DesiredSpec(obj, policy, replicas, req)
	if desired.SchedulePriority, err = r.schedulePriority(ctx, policy); apierrors.IsNotFound(err) {
		// No binding is born without its priority; one that exists keeps the priority it has, and everything
		// else still reaches it. The class's creation queues the template again (policiesNaming).
		r.Recorder.Eventf(obj, corev1.EventTypeWarning, ReasonPriorityClassNotFound,
			"%s names PriorityClass %s, which does not exist: the binding keeps the priority it has, or waits for the class",
			policy, policy.Spec.SchedulePriority.PriorityClassName)
		var existing workv1alpha1.ResourceBinding
		if err := r.Client.Get(ctx, bindingKey(obj.GetKind(), obj.GetNamespace(), obj.GetName()), &existing); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
		desired.SchedulePriority = existing.Spec.SchedulePriority.DeepCopy()
	} else if err != nil {
		return reconcile.Result{}, err
	}
	return r.writeBinding(ctx, obj, policy, desired)
}

// inVersion is template obj read in apiVersion, the version its policy propagates it in; obj itself when it is of
// that version already, or when the API server does not serve that version (the policy is told so: UnknownKind).
func (r *Reconciler) inVersion(ctx context.Context, obj *unstructured.Unstructured, apiVersion string) (*unstructured.Unstructured, error) {
	if apiVersion == obj.GetAPIVersion() {
		return obj, nil
	}
	in := &unstructured.Unstructured{}
	in.SetAPIVersion(apiVersion)
	in.SetKind(obj.GetKind())
	err := r.Templates.Get(ctx, client.ObjectKeyFromObject(obj), in)
	if meta.IsNoMatchError(err) {
		return obj, nil
	}
	if err != nil {
		return nil, err
	}
	return in, nil
}

func (r *Reconciler) resource(key templates.Key) (dynamic.ResourceInterface, error) {
	m, err := r.Mapper.RESTMapping(key.GVK.GroupKind(), key.GVK.Version)
	if err != nil {
		return nil, err
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return r.Dynamic.Resource(m.Resource).Namespace(key.Namespace), nil
	}
	return r.Dynamic.Resource(m.Resource), nil
}

// candidates are the live policies that may select a template of namespace, read from reader: the
// PropagationPolicies of that namespace and every ClusterPropagationPolicy.
func (r *Reconciler) candidates(ctx context.Context, reader client.Reader, namespace string) ([]Policy, error) {
	var out []Policy
	if namespace != "" {
		var pps policyv1alpha1.PropagationPolicyList
		if err := reader.List(ctx, &pps, client.InNamespace(namespace)); err != nil {
			return nil, err
		}
		for i := range pps.Items {
			if pps.Items[i].DeletionTimestamp == nil {
				out = append(out, FromPropagationPolicy(&pps.Items[i]))
			}
		}
	}
	var cpps policyv1alpha1.ClusterPropagationPolicyList
	if err := reader.List(ctx, &cpps); err != nil {
		return nil, err
	}
	for i := range cpps.Items {
		if cpps.Items[i].DeletionTimestamp == nil {
			out = append(out, FromClusterPropagationPolicy(&cpps.Items[i]))
		}
	}
	return out, nil
}

// templateQueue is the template controller's source: informers and the policy controller add template keys to
// it, and it hands them to the controller's queue once that starts.
type templateQueue struct {
	// canonical names each key's kind in the version its informer reads it in (templates.Cache.Canonical).
	canonical func(templates.Key) templates.Key

	mu      sync.Mutex
	queue   workqueue.TypedRateLimitingInterface[templates.Key]
	pending []templates.Key
}

// Start hands the keys added so far, and every key added later, to queue.
func (t *templateQueue) Start(_ context.Context, queue workqueue.TypedRateLimitingInterface[templates.Key]) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.queue = queue
	for _, k := range t.pending {
		queue.Add(k)
	}
	t.pending = nil
	return nil
}

func (t *templateQueue) add(k templates.Key) {
	k = t.canonical(k)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.queue == nil {
		t.pending = append(t.pending, k)
		return
	}
	t.queue.Add(k)
}

func (t *templateQueue) String() string { return "detector templates" }

// bindingTemplateKeys is the canonical key of the template a binding was made for, for the controller's queue.
func (r *Reconciler) bindingTemplateKeys(ctx context.Context, obj client.Object) []templates.Key {
	keys := bindingTemplate(ctx, obj)
	for i := range keys {
		keys[i] = r.Templates.Canonical(keys[i])
	}
	return keys
}

// bindingTemplate is the template a binding was made for, in the version it propagates.
func bindingTemplate(_ context.Context, obj client.Object) []templates.Key {
	b, ok := obj.(*workv1alpha1.ResourceBinding)
	if !ok {
		return nil
	}
	spec := &b.Spec
	gv, err := schema.ParseGroupVersion(spec.Resource.APIVersion)
	if err != nil {
		return nil
	}
	k := templates.Key{GVK: gv.WithKind(spec.Resource.Kind)}
	k.Namespace, k.Name = spec.Resource.Namespace, spec.Resource.Name
	return []templates.Key{k}
}
