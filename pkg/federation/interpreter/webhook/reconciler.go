package webhook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/acceptance"
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

// Reconciler rebuilds Layer's webhooks from every ResourceInterpreterWebhookConfiguration of the host when what
// serves changes, and writes each one's verdict to its status, the last accepted version included: a configuration
// with a webhook that cannot be called (bad CA bundle, URL, or context versions) is refused, and that copy is what
// every federator serves instead, a restarted one too. It works as customization.Reconciler does: configurations
// are cluster-scoped and every shard needs all of them, so its manager must watch them unsharded; every shard writes
// the statuses as acceptance.Statuses does, each only over the version it read and only when the status says
// something else than its verdict, and the federator whose write changes a configuration's standing reports it, once.
type Reconciler struct {
	// Client lists the configurations and writes their statuses.
	Client client.Client
	// Layer receives each new set.
	Layer *Layer
	// Recorder records each change of a configuration's standing on it; required.
	Recorder record.EventRecorder
	// Changes is told, after each new set is swapped in, what it may answer differently, so that the stages look
	// again at once at the objects of those kinds; not at Load, which fills the layer before the stages start.
	// Nil tells no one: the new set reaches each object at its next reconcile.
	Changes *rerun.Notifier

	// mu makes one pass at a time: two could hand the layer an older set last. It guards built, statuses and
	// accepted.
	mu sync.Mutex
	// built are the webhooks built in the last pass, to build each version once, not at every status write.
	built map[builtKey]builtWebhooks
	// statuses writes the verdicts; nil before the first Reconcile.
	statuses *acceptance.Statuses[*configv1alpha1.AcceptedWebhooks, *configv1alpha1.ResourceInterpreterWebhookConfiguration]
	// accepted is the last accepted version of each configuration as this federator last decided it, for a status
	// that keeps none yet or an older one; nil before the first pass.
	accepted *acceptance.Remembered[*configv1alpha1.AcceptedWebhooks, configv1alpha1.ResourceInterpreterWebhookConfiguration, *configv1alpha1.ResourceInterpreterWebhookConfiguration]
}

// configKey is one configuration: its UID tells one deleted and created again under its name from the first.
type configKey struct {
	name string
	uid  types.UID
}

func keyOf(c *configv1alpha1.ResourceInterpreterWebhookConfiguration) configKey {
	return configKey{c.Name, c.UID}
}

// builtKey is one version of a configuration's webhooks: the same configuration (by UID) with the same webhooks.
type builtKey struct {
	config      configKey
	fingerprint string
}

type builtWebhooks struct {
	in  *Interpreter
	err error
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

// Reconcile selects the set from the configurations in the host, hands it to the layer if it changed, and writes
// each verdict to its configuration's status.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	logger := log.FromContext(ctx)
	var list configv1alpha1.ResourceInterpreterWebhookConfigurationList
	if err := r.Client.List(ctx, &list); err != nil {
		return reconcile.Result{}, err
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	verdicts, changed := r.serve(list.Items)
	if !changed.Empty() {
		logger.V(1).Info("resource interpreter webhooks rebuilt", "changed", changed.String())
		if r.Changes != nil {
			r.Changes.Notify(changed)
		}
	}

	if r.statuses == nil {
		r.statuses = acceptance.NewStatuses(statusKind)
	}
	return r.statuses.Write(ctx, r.Client, r.Recorder, acceptance.Objects(list.Items), verdicts)
}

// Load fills the layer from the configurations reader lists, as Reconcile would but without writing their statuses
// (the first Reconcile does). A starting federator calls it before its stages run, with a reader that works before
// the manager starts (its APIReader): the layer starts empty, and a stage passing first would interpret a kind
// without the user's webhook.
func (r *Reconciler) Load(ctx context.Context, reader client.Reader) error {
	var list configv1alpha1.ResourceInterpreterWebhookConfigurationList
	if err := reader.List(ctx, &list); err != nil {
		return fmt.Errorf("loading resource interpreter webhook configurations: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.serve(list.Items)
	return nil
}

// serve hands the layer the webhooks Select chooses from current, unless they answer as the ones it has, and tells
// the verdicts and what the new set changed.
func (r *Reconciler) serve(current []configv1alpha1.ResourceInterpreterWebhookConfiguration) ([]Verdict, interpreter.Affected) {
	if r.accepted == nil {
		r.accepted = acceptance.NewRemembered(statusKind, func(v *configv1alpha1.AcceptedWebhooks) int64 { return v.Generation })
	}
	current = r.accepted.Recall(current)
	prevBuilt := r.built
	r.built = map[builtKey]builtWebhooks{}
	parts, verdicts := Select(current, func(c *configv1alpha1.ResourceInterpreterWebhookConfiguration, webhooks []configv1alpha1.ResourceInterpreterWebhook) (*Interpreter, error) {
		k := builtKey{keyOf(c), fingerprint(webhooks)}
		b, ok := r.built[k]
		if !ok {
			if b, ok = prevBuilt[k]; !ok || k.fingerprint == "" {
				b.in, b.err = New([]configv1alpha1.ResourceInterpreterWebhookConfiguration{{ObjectMeta: c.ObjectMeta, Webhooks: webhooks}})
			}
			r.built[k] = b
		}
		return b.in, b.err
	})
	r.accepted.Remember(current, verdicts)
	next := Merge(parts...)
	changed := Changed(r.Layer.Current(), next)
	if !changed.Empty() {
		// A set that answers as the current one (every status write reconciles every shard) keeps it.
		r.Layer.Set(next)
	}
	return verdicts, changed
}

// fingerprint identifies webhooks by what a layer built from them calls; "" if they cannot be encoded, and then
// they are built each time.
func fingerprint(webhooks []configv1alpha1.ResourceInterpreterWebhook) string {
	b, err := json.Marshal(webhooks)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
