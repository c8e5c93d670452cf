package customization

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/declarative"
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

// Reconciler rebuilds Layer's set from every ResourceInterpreterCustomization of the host when one changes.
// Customizations are cluster-scoped and every shard needs all of them, so its manager must watch them unsharded.
type Reconciler struct {
	// Client lists the customizations.
	Client client.Reader
	// Layer receives each new set.
	Layer *Layer
	// Recorder records refusals on the customizations; required.
	Recorder record.EventRecorder
	// Timeout and MemoryLimit bound one call of a script; declarative's defaults when zero.
	Timeout     time.Duration
	MemoryLimit uint64

	mu       sync.Mutex
	lastGood map[string]configv1alpha1.ResourceInterpreterCustomization
	reported map[string]report // what the last Event said, by name
}

// report is what an Event said about a customization: a generation serves, or is refused and why. The same
// generation can go from serving to refused (an older customization is edited to claim its operation) and back,
// so the generation alone does not tell whether there is news.
type report struct {
	generation int64
	refusal    string // empty when the generation serves
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

// Reconcile builds the set from the customizations in the host and hands it to the layer. Each customization's
// standing (its current version serves, or is refused and why) is reported when it changes: a refusal with a
// Warning Event and a log line, serving with a Normal Event.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	logger := log.FromContext(ctx)
	var list configv1alpha1.ResourceInterpreterCustomizationList
	if err := r.Client.List(ctx, &list); err != nil {
		return reconcile.Result{}, err
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	serve, refused := Select(list.Items, r.lastGood)
	in, err := declarative.New(serve)
	if err != nil {
		// Select only keeps customizations that validate together, so this is a defect; keep the current set.
		return reconcile.Result{}, fmt.Errorf("building the selected customizations: %w", err)
	}
	if r.Timeout > 0 {
		in.WithTimeout(r.Timeout)
	}
	if r.MemoryLimit > 0 {
		in.WithMemoryLimit(r.MemoryLimit)
	}
	r.Layer.Set(in)

	byName := map[string]*configv1alpha1.ResourceInterpreterCustomization{}
	for i := range list.Items {
		byName[list.Items[i].Name] = &list.Items[i]
	}
	r.remember(serve, byName)
	for _, ref := range refused {
		msg := ref.Err.Error()
		if ref.Fallback {
			msg += "; its previous version keeps serving"
		}
		if !r.news(ref.Name, report{generation: ref.Generation, refusal: msg}) {
			continue
		}
		logger.Error(ref.Err, "refused a resource interpreter customization", "customization", ref.Name,
			"generation", ref.Generation, "previousVersionServes", ref.Fallback)
		r.Recorder.Eventf(byName[ref.Name], corev1.EventTypeWarning, ReasonRefused, "%s", msg)
	}
	for _, c := range serve {
		cur := byName[c.Name]
		// A last good version serving in place of a refused current one was reported with the refusal.
		if cur.Generation == c.Generation && r.news(c.Name, report{generation: c.Generation}) {
			r.Recorder.Eventf(cur, corev1.EventTypeNormal, ReasonServing, "serving %d scripts for %s, %s",
				len(declarative.Operations(&c)), c.Spec.Target.APIVersion, c.Spec.Target.Kind)
		}
	}
	logger.V(1).Info("resource interpreter customizations rebuilt", "serving", len(serve), "refused", len(refused))
	return reconcile.Result{}, nil
}

// remember records the served versions as the last good ones and forgets deleted customizations, including
// those that never served.
func (r *Reconciler) remember(serve []configv1alpha1.ResourceInterpreterCustomization, current map[string]*configv1alpha1.ResourceInterpreterCustomization) {
	if r.lastGood == nil {
		r.lastGood = map[string]configv1alpha1.ResourceInterpreterCustomization{}
		r.reported = map[string]report{}
	}
	for _, c := range serve {
		r.lastGood[c.Name] = c
	}
	for name := range r.lastGood {
		if _, ok := current[name]; !ok {
			delete(r.lastGood, name)
		}
	}
	for name := range r.reported {
		if _, ok := current[name]; !ok {
			delete(r.reported, name)
		}
	}
}

// news records rep as what is said about name and tells whether it differs from what was said last.
func (r *Reconciler) news(name string, rep report) bool {
	if prev, ok := r.reported[name]; ok && prev == rep {
		return false
	}
	r.reported[name] = rep
	return true
}
