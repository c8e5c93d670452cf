package customization

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/acceptance"
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
// them, so its manager must watch them unsharded; every shard writes the statuses too, as acceptance.Statuses does:
// each only over the version it read, and only when the status says something else than its verdict, so that shards
// agreeing write nothing and versions disagreeing do not take turns as fast as they can.
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

	// mu makes one Reconcile at a time: two could hand the layer an older set last. It guards built, served,
	// statuses and accepted.
	mu sync.Mutex
	// built is the fingerprint of the set the layer serves; "" before the first.
	built string
	// served is the set the layer serves, for Changed.
	served []configv1alpha1.ResourceInterpreterCustomization
	// statuses writes the verdicts; nil before the first Reconcile.
	statuses *acceptance.Statuses[*configv1alpha1.AcceptedVersion, *configv1alpha1.ResourceInterpreterCustomization]
	// accepted is the last accepted version of each customization as this federator last decided it, for a status
	// that keeps none yet or an older one (see selectFrom); nil before the first pass.
	accepted *acceptance.Remembered[*configv1alpha1.AcceptedVersion, configv1alpha1.ResourceInterpreterCustomization, *configv1alpha1.ResourceInterpreterCustomization]
}

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
	serve, verdicts := r.selectFrom(list.Items)
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

	if r.statuses == nil {
		r.statuses = acceptance.NewStatuses(statusKind)
	}
	return r.statuses.Write(ctx, r.Client, r.Recorder, acceptance.Objects(list.Items), verdicts)
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
	serve, _ := r.selectFrom(list.Items)
	if _, err := r.build(serve); err != nil {
		return fmt.Errorf("loading resource interpreter customizations: %w", err)
	}
	return nil
}

// selectFrom is Select of current, where a status keeps an older accepted version than this federator accepted (or
// none), with the one it accepted: a version accepted and served, then edited before its status write (which
// conflicts), keeps serving while the edit is refused, not the version before it nor nothing, and the status
// write that follows keeps it for every federator.
func (r *Reconciler) selectFrom(current []configv1alpha1.ResourceInterpreterCustomization) ([]configv1alpha1.ResourceInterpreterCustomization, []Verdict) {
	if r.accepted == nil {
		r.accepted = acceptance.NewRemembered(statusKind, func(v *configv1alpha1.AcceptedVersion) int64 { return v.Generation })
	}
	current = r.accepted.Recall(current)
	serve, verdicts := Select(current)
	r.accepted.Remember(current, verdicts)
	return serve, verdicts
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
