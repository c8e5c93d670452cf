package labelmode

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/record"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/webhook/labels"
)

// ConfigurationName is the MutatingWebhookConfiguration the manager keeps for label mode.
const ConfigurationName = "fedmesh-shard-labels"

// RetryUnresolved is how long the reconciler waits before it looks again for the resources of label-mode configs
// that the API server did not serve (a CRD not installed yet, or a typo).
const RetryUnresolved = 30 * time.Second

// Reconciler syncs the webhook registration and the backfill with the ShardingConfigs in label mode. A resource
// that does not resolve holds back none of the others: they are backfilled, it is reported on the configs that name
// it and tried again every RetryUnresolved.
type Reconciler struct {
	Client client.Client
	// APIReader reads Owner straight from the API server (caching ClusterRoles would mean listing them all); Client
	// when nil.
	APIReader client.Reader
	// Owner names the ClusterRole that owns the registration (owner.go); empty sets no owner.
	Owner     string
	Mapper    meta.RESTMapper
	Discovery discovery.DiscoveryInterface
	// ClientConfig says how the API server reaches the manager's webhook server (URL or Service, and CA bundle),
	// asked at each reconcile: the CA can change while the manager runs.
	ClientConfig func() (admissionregistrationv1.WebhookClientConfig, error)
	// Resync, when set, asks for a reconcile: the manager sends on it when the webhook CA changed.
	Resync   <-chan event.GenericEvent
	Backfill Backfill
	// Recorder records, on the configs, the resources that do not resolve; required.
	Recorder record.EventRecorder

	mu sync.Mutex
	// reported is what was last reported unresolved on each config, so that a retry does not report it again.
	reported map[types.UID]string
	// ownerMissing is whether the owner was last found missing (or unreadable), so that is logged once.
	ownerMissing bool
}

// Backfill labels the objects of the resources it is given; *labels.Backfill is the one the manager runs.
type Backfill interface {
	Add(gvrs ...schema.GroupVersionResource) error
}

// SetupWithManager runs one reconcile per change of any ShardingConfig: the result depends on all of them.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Recorder == nil {
		return errors.New("labelmode: no Recorder")
	}
	all := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: ConfigurationName}}}
	})
	b := ctrl.NewControllerManagedBy(mgr).Named("labelmode").
		Watches(&meshv1alpha1.ShardingConfig{}, all).
		// Its own registration too: deleted with an owner that was created again (a new UID), it is registered again.
		Watches(&admissionregistrationv1.MutatingWebhookConfiguration{}, all, builder.WithPredicates(
			predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == ConfigurationName })))
	if r.Resync != nil {
		b = b.WatchesRawSource(source.Channel(r.Resync, all))
	}
	return b.Complete(r)
}

func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	var list meshv1alpha1.ShardingConfigList
	if err := r.Client.List(ctx, &list); err != nil {
		return reconcile.Result{}, err
	}
	rules := labels.WebhookRules(list.Items)
	findOwner, err := r.applyRegistration(ctx, rules)
	if err != nil {
		return reconcile.Result{}, err
	}
	resources, all := labels.LabelModeResources(list.Items)
	found, err := r.versions(resources, all)
	if err != nil {
		return reconcile.Result{}, err
	}
	var errs []error
	for _, gvr := range found.gvrs {
		// One at a time: Add stops at its first error, and one resource must not hold back the others.
		if err := r.Backfill.Add(gvr); err != nil {
			errs = append(errs, err)
		}
	}
	r.report(ctx, list.Items, found.unresolved)
	if err := errors.Join(errs...); err != nil {
		return reconcile.Result{}, err
	}
	if found.incomplete != nil {
		log.FromContext(ctx).Info("some API groups could not be discovered; backfilling the resources of the others",
			"error", found.incomplete.Error(), "retryAfter", RetryUnresolved)
	}
	if len(found.unresolved) > 0 || found.incomplete != nil || findOwner {
		return reconcile.Result{RequeueAfter: RetryUnresolved}, nil
	}
	return reconcile.Result{}, nil
}

// applyRegistration creates, updates or (with no rules) deletes the webhook registration, owned by Owner. retry
// says to look for the owner again later.
func (r *Reconciler) applyRegistration(ctx context.Context, rules []admissionregistrationv1.RuleWithOperations) (retry bool, err error) {
	cc, err := r.ClientConfig()
	if err != nil {
		return false, fmt.Errorf("webhook client config: %w", err)
	}
	want := labels.MutatingWebhookConfiguration(ConfigurationName, cc, rules)
	var have admissionregistrationv1.MutatingWebhookConfiguration
	err = r.Client.Get(ctx, client.ObjectKey{Name: ConfigurationName}, &have)
	switch {
	case apierrors.IsNotFound(err) && len(rules) == 0:
		return false, nil
	case apierrors.IsNotFound(err):
		want.OwnerReferences, retry = r.ownerReferences(ctx, nil)
		return retry, r.Client.Create(ctx, want)
	case err != nil:
		return false, err
	case len(rules) == 0:
		return false, client.IgnoreNotFound(r.Client.Delete(ctx, &have))
	}
	// A registration of a manager that set no owner, or another, gets this one's.
	have.OwnerReferences, retry = r.ownerReferences(ctx, have.OwnerReferences)
	have.Webhooks = want.Webhooks
	return retry, r.Client.Update(ctx, &have)
}

// resolved is what versions found.
type resolved struct {
	// gvrs are the resources to backfill, each in its served version.
	gvrs []schema.GroupVersionResource
	// unresolved are the resources named by configs that the server does not serve, and why.
	unresolved map[schema.GroupResource]error
	// incomplete is why discovery of every resource missed some API groups, if it did.
	incomplete error
}

// versions finds the served version of each resource; all means every namespaced resource the server has. It fails
// only when it finds nothing at all for all.
func (r *Reconciler) versions(resources []schema.GroupResource, all bool) (resolved, error) {
	var out resolved
	if all {
		lists, err := discovery.ServerPreferredNamespacedResources(r.Discovery)
		if err != nil && len(lists) == 0 {
			return out, err
		}
		out.incomplete = err
		for _, list := range lists {
			gv, err := schema.ParseGroupVersion(list.GroupVersion)
			if err != nil {
				continue
			}
			for _, res := range list.APIResources {
				verbs := sets.New(res.Verbs...)
				if verbs.HasAll("list", "watch", "patch") {
					out.gvrs = append(out.gvrs, gv.WithResource(res.Name))
				}
			}
		}
		return out, nil
	}
	for _, gr := range resources {
		gvr, err := r.Mapper.ResourceFor(gr.WithVersion(""))
		if err != nil {
			if out.unresolved == nil {
				out.unresolved = map[schema.GroupResource]error{}
			}
			out.unresolved[gr] = err
			continue
		}
		out.gvrs = append(out.gvrs, gvr)
	}
	return out, nil
}
