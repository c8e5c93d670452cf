package customization

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/declarative"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/rerun"
)

// Event reasons on ResourceInterpreterCustomizations.
const (
	// ReasonRefused: the customization's current version does not serve (bad script or conflict).
	ReasonRefused = "CustomizationRefused"
	// ReasonServing: the customization's current version serves.
	ReasonServing = "CustomizationServing"
)

// setRequest is the one request of the reconciler: any change rebuilds the whole set, because customizations
// interact (two may not define the same operation for one kind).
var setRequest = reconcile.Request{NamespacedName: types.NamespacedName{Name: "resourceinterpretercustomizations"}}

// Reconciler rebuilds Layer's set from every ResourceInterpreterCustomization of the host when what serves changes
// (not on a status write that leaves it as it was: every shard writes the statuses, and each write reconciles every
// shard), and writes each one's verdict to its status, the last accepted version included: that copy is what every
// federator serves while a later version is refused. Customizations are cluster-scoped and every shard needs all of
// them, so its manager must watch them unsharded; every shard writes the statuses too, each only over the version it
// read, and only when decideStatus says to, so that shards agreeing write nothing and versions disagreeing do not
// take turns as fast as they can.
type Reconciler struct {
	// Client lists the customizations and writes their statuses.
	Client client.Client
	// Layer receives each new set.
	Layer *Layer
	// Recorder records each change of a customization's standing on it; required.
	Recorder record.EventRecorder
	// Timeout and MemoryLimit bound one call of a script; declarative's defaults when zero.
	Timeout     time.Duration
	MemoryLimit uint64
	// Changes is told, after each new set is swapped in, what it may answer differently, so that the stages look
	// again at once at the objects of those kinds; not at Load, which fills the layer before the stages start.
	// Nil tells no one: the new set reaches each object at its next reconcile.
	Changes *rerun.Notifier

	// mu makes one Reconcile at a time: two could hand the layer an older set last. It guards built, served and
	// stated.
	mu sync.Mutex
	// built is the fingerprint of the set the layer serves; "" before the first.
	built string
	// served is the set the layer serves, for Changed.
	served []configv1alpha1.ResourceInterpreterCustomization
	// stated is this shard's verdict on each customization as it last wrote it or found it written.
	stated map[statedKey]stated
}

// staleRetry is how soon a status written over by another federator since it was read is decided again.
const staleRetry = 200 * time.Millisecond

// SetupWithManager registers the reconciler with mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Recorder == nil {
		return errors.New("interpreter-customization: no Recorder")
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("interpreter-customization").
		Watches(&configv1alpha1.ResourceInterpreterCustomization{},
			handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
				return []reconcile.Request{setRequest}
			})).
		Complete(r)
}

// Reconcile selects the set from the customizations in the host, hands it to the layer if it changed, and writes
// each verdict to its customization's status. The federator whose write changes a customization's standing reports
// it: a refusal with a Warning Event and a log line, serving with a Normal Event; so each change is reported once,
// whatever the number of shards.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	logger := log.FromContext(ctx)
	var list configv1alpha1.ResourceInterpreterCustomizationList
	if err := r.Client.List(ctx, &list); err != nil {
		return reconcile.Result{}, err
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	serve, verdicts := Select(list.Items)
	prev := r.served
	switch rebuilt, err := r.build(serve); {
	case err != nil:
		return reconcile.Result{}, err
	case rebuilt:
		changed := Changed(prev, serve)
		logger.V(1).Info("resource interpreter customizations rebuilt", "serving", len(serve), "customizations", len(verdicts),
			"changed", changed.String())
		if r.Changes != nil {
			r.Changes.Notify(changed)
		}
	}

	byName := map[string]*configv1alpha1.ResourceInterpreterCustomization{}
	for i := range list.Items {
		byName[list.Items[i].Name] = &list.Items[i]
	}
	// Refusals first: they are what needs a user's attention.
	sort.SliceStable(verdicts, func(i, j int) bool { return !verdicts[i].Accepted() && verdicts[j].Accepted() })
	r.forget(list.Items)
	stale, wait := false, time.Duration(0)
	for i := range verdicts {
		v := &verdicts[i]
		changed, after, err := r.record(ctx, byName[v.Name], v)
		if after > 0 && (wait == 0 || after < wait) {
			wait = after
		}
		switch {
		case apierrors.IsConflict(err):
			// Another federator wrote it since it was read: the newer object decides again.
			logger.V(1).Info("customization status changed since it was read; deciding again", "customization", v.Name)
			stale = true
		case apierrors.IsNotFound(err):
			// Deleted since the list (its deletion reconciles again), or a CRD from before the status subresource.
			logger.Info("could not write the status of a resource interpreter customization: deleted since, or its CRD "+
				"has no status subresource (apply the chart's CRDs)", "customization", v.Name, "error", err.Error())
		case err != nil:
			return reconcile.Result{}, fmt.Errorf("status of customization %s: %w", v.Name, err)
		case changed:
			r.report(ctx, byName[v.Name], v)
		}
	}
	if stale {
		return reconcile.Result{RequeueAfter: staleRetry}, nil
	}
	return reconcile.Result{RequeueAfter: wait}, nil
}

// Load fills the layer from the customizations reader lists, as Reconcile would but without writing their
// statuses (the first Reconcile does). A starting federator calls it before its stages run, with a reader that
// works before the manager starts (its APIReader): the layer starts empty, and a stage passing first would
// interpret a customized kind without the user's scripts.
func (r *Reconciler) Load(ctx context.Context, reader client.Reader) error {
	var list configv1alpha1.ResourceInterpreterCustomizationList
	if err := reader.List(ctx, &list); err != nil {
		return fmt.Errorf("loading resource interpreter customizations: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	serve, _ := Select(list.Items)
	if _, err := r.build(serve); err != nil {
		return fmt.Errorf("loading resource interpreter customizations: %w", err)
	}
	return nil
}

// build hands the layer the set serve compiles to, unless it already serves that set, and tells whether it did.
func (r *Reconciler) build(serve []configv1alpha1.ResourceInterpreterCustomization) (bool, error) {
	fp := fingerprint(serve)
	if !needsBuild(r.built, fp) {
		return false, nil
	}
	in, err := declarative.New(serve)
	if err != nil {
		// Select only keeps customizations that validate together, so this is a defect; keep the current set.
		return false, fmt.Errorf("building the selected customizations: %w", err)
	}
	if r.Timeout > 0 {
		in.WithTimeout(r.Timeout)
	}
	if r.MemoryLimit > 0 {
		in.WithMemoryLimit(r.MemoryLimit)
	}
	r.Layer.Set(in)
	r.built, r.served = fp, serve
	return true, nil
}

// forget drops the verdicts stated on customizations no longer in current.
func (r *Reconciler) forget(current []configv1alpha1.ResourceInterpreterCustomization) {
	if r.stated == nil {
		r.stated = map[statedKey]stated{}
	}
	keep := make(map[statedKey]bool, len(current))
	for i := range current {
		keep[keyOf(&current[i])] = true
	}
	for k := range r.stated {
		if !keep[k] {
			delete(r.stated, k)
		}
	}
}

// statedKey is one customization: its UID tells one deleted and created again under its name from the first.
type statedKey struct {
	name string
	uid  types.UID
}

func keyOf(c *configv1alpha1.ResourceInterpreterCustomization) statedKey {
	return statedKey{c.Name, c.UID}
}

// record writes v to c's status when decideStatus says to, only over the version of c it was decided from, and
// tells whether the standing (the Accepted condition) changed, or after how long to decide again.
func (r *Reconciler) record(ctx context.Context, c *configv1alpha1.ResourceInterpreterCustomization, v *Verdict) (standingChanged bool, retryAfter time.Duration, err error) {
	want := c.DeepCopy()
	want.Status.ObservedGeneration = v.Generation
	want.Status.ServedGeneration = v.ServedGeneration
	want.Status.LastAccepted = v.LastAccepted.DeepCopy()
	cond := v.Condition()
	prev := meta.FindStatusCondition(c.Status.Conditions, cond.Type)
	standingChanged = prev == nil || prev.Status != cond.Status || prev.Reason != cond.Reason ||
		prev.Message != cond.Message || prev.ObservedGeneration != cond.ObservedGeneration
	meta.SetStatusCondition(&want.Status.Conditions, cond)
	verdict, now := ownedOf(&want.Status), time.Now()
	var last *stated
	if s, ok := r.stated[keyOf(c)]; ok {
		last = &s
	}
	switch action, after := decideStatus(ownedOf(&c.Status), verdict, last, now); action {
	case statusAgrees:
		r.stated[keyOf(c)] = stated{verdict: verdict, at: now}
		return false, 0, nil
	case statusWait:
		return false, after, nil
	}
	// An update carries the resourceVersion read: a federator with an older view (a lagging cache) cannot write
	// over a newer verdict.
	if err := r.Client.Status().Update(ctx, want); err != nil {
		return false, 0, err
	}
	r.stated[keyOf(c)] = stated{verdict: verdict, at: now}
	return standingChanged, 0, nil
}

// report tells of c's new standing, v.
func (r *Reconciler) report(ctx context.Context, c *configv1alpha1.ResourceInterpreterCustomization, v *Verdict) {
	if v.Accepted() {
		r.Recorder.Eventf(c, corev1.EventTypeNormal, ReasonServing, "%s", v.Message)
		return
	}
	log.FromContext(ctx).Error(v.Err, "refused a resource interpreter customization", "customization", v.Name,
		"generation", v.Generation, "servedGeneration", v.ServedGeneration)
	r.Recorder.Eventf(c, corev1.EventTypeWarning, ReasonRefused, "%s", v.Message)
}
