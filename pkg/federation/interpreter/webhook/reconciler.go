package webhook

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/rerun"
)

// Event reasons on ResourceInterpreterWebhookConfigurations.
const (
	// ReasonRefused: a webhook of the configuration's current version cannot be called.
	ReasonRefused = "WebhookConfigurationRefused"
	// ReasonServing: the configuration's current version serves.
	ReasonServing = "WebhookConfigurationServing"
)

var setRequest = reconcile.Request{NamespacedName: types.NamespacedName{Name: "resourceinterpreterwebhookconfigurations"}}

// Reconciler rebuilds Layer's webhooks from every ResourceInterpreterWebhookConfiguration of the host when one
// changes. A configuration with a webhook that cannot be called (bad CA bundle, URL, or context versions) is
// refused with an Event, and its last good version keeps serving. Configurations are cluster-scoped and every
// shard needs all of them, so its manager must watch them unsharded.
type Reconciler struct {
	// Client lists the configurations.
	Client client.Reader
	// Layer receives each new set.
	Layer *Layer
	// Recorder records refusals on the configurations; required.
	Recorder record.EventRecorder
	// Changes is told, after each new set is swapped in, what it may answer differently, so that the stages look
	// again at once at the objects of those kinds; not at Load, which fills the layer before the stages start.
	// Nil tells no one: the new set reaches each object at its next reconcile.
	Changes *rerun.Notifier

	mu    sync.Mutex
	built map[string]builtConfig // the last good version of each configuration, by name
}

type builtConfig struct {
	generation int64
	in         *Interpreter
}

// SetupWithManager registers the reconciler with mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Recorder == nil {
		return errors.New("interpreter-webhook: no Recorder")
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("interpreter-webhook").
		Watches(&configv1alpha1.ResourceInterpreterWebhookConfiguration{},
			handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
				return []reconcile.Request{setRequest}
			})).
		Complete(r)
}

// Reconcile builds each configuration whose generation changed, keeps the last good version of those that fail,
// and hands the whole set to the layer.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	changed, err := r.rebuild(ctx, r.Client)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !changed.Empty() {
		log.FromContext(ctx).V(1).Info("resource interpreter webhooks rebuilt", "changed", changed.String())
		if r.Changes != nil {
			r.Changes.Notify(changed)
		}
	}
	return reconcile.Result{}, nil
}

// Load fills the layer from the configurations reader lists, as Reconcile does. A starting federator calls it
// before its stages run, with a reader that works before the manager starts (its APIReader): the layer starts
// empty, and a stage passing first would interpret a kind without the user's webhook.
func (r *Reconciler) Load(ctx context.Context, reader client.Reader) error {
	if _, err := r.rebuild(ctx, reader); err != nil {
		return fmt.Errorf("loading resource interpreter webhook configurations: %w", err)
	}
	return nil
}

// rebuild is Reconcile, from the configurations reader lists, and tells what the new set changed.
func (r *Reconciler) rebuild(ctx context.Context, reader client.Reader) (interpreter.Affected, error) {
	logger := log.FromContext(ctx)
	var list configv1alpha1.ResourceInterpreterWebhookConfigurationList
	if err := reader.List(ctx, &list); err != nil {
		return interpreter.Affected{}, err
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.built == nil {
		r.built = map[string]builtConfig{}
	}
	var parts []*Interpreter
	seen := map[string]bool{}
	for i := range list.Items {
		c := &list.Items[i]
		seen[c.Name] = true
		prev, hasPrev := r.built[c.Name]
		if hasPrev && prev.generation == c.Generation {
			parts = append(parts, prev.in)
			continue
		}
		in, err := New([]configv1alpha1.ResourceInterpreterWebhookConfiguration{*c})
		if err != nil {
			msg := err.Error()
			if hasPrev {
				msg += "; its previous version keeps serving"
				parts = append(parts, prev.in)
			}
			logger.Error(err, "refused a resource interpreter webhook configuration", "configuration", c.Name,
				"generation", c.Generation, "previousVersionServes", hasPrev)
			r.Recorder.Eventf(c, corev1.EventTypeWarning, ReasonRefused, "%s", msg)
			// Remember the refusal as this generation's, so it is reported once; the previous version stays.
			if hasPrev {
				r.built[c.Name] = builtConfig{generation: c.Generation, in: prev.in}
			} else {
				r.built[c.Name] = builtConfig{generation: c.Generation, in: &Interpreter{}}
			}
			continue
		}
		r.built[c.Name] = builtConfig{generation: c.Generation, in: in}
		parts = append(parts, in)
		r.Recorder.Eventf(c, corev1.EventTypeNormal, ReasonServing, "serving %d webhooks", len(in.hooks))
	}
	for name := range r.built {
		if !seen[name] {
			delete(r.built, name)
		}
	}
	next := Merge(parts...)
	changed := Changed(r.Layer.Current(), next)
	r.Layer.Set(next)
	return changed, nil
}
