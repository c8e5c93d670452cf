package labelmode

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/discovery"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/webhook/labels"
)

// ConfigurationName is the MutatingWebhookConfiguration the manager keeps for label mode.
const ConfigurationName = "fedmesh-shard-labels"

// Reconciler syncs the webhook registration and the backfill with the ShardingConfigs in label mode.
type Reconciler struct {
	Client    client.Client
	Mapper    meta.RESTMapper
	Discovery discovery.DiscoveryInterface
	// ClientConfig says how the API server reaches the manager's webhook server (URL or Service, and CA bundle).
	ClientConfig admissionregistrationv1.WebhookClientConfig
	Backfill     *labels.Backfill
}

// SetupWithManager runs one reconcile per change of any ShardingConfig: the result depends on all of them.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	all := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: ConfigurationName}}}
	})
	return ctrl.NewControllerManagedBy(mgr).Named("labelmode").
		Watches(&meshv1alpha1.ShardingConfig{}, all).
		Complete(r)
}

func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	var list meshv1alpha1.ShardingConfigList
	if err := r.Client.List(ctx, &list); err != nil {
		return reconcile.Result{}, err
	}
	rules := labels.WebhookRules(list.Items)
	if err := r.applyRegistration(ctx, rules); err != nil {
		return reconcile.Result{}, err
	}
	resources, all := labels.LabelModeResources(list.Items)
	gvrs, err := r.versions(resources, all)
	if err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, r.Backfill.Add(gvrs...)
}

// applyRegistration creates, updates or (with no rules) deletes the webhook registration.
func (r *Reconciler) applyRegistration(ctx context.Context, rules []admissionregistrationv1.RuleWithOperations) error {
	want := labels.MutatingWebhookConfiguration(ConfigurationName, r.ClientConfig, rules)
	var have admissionregistrationv1.MutatingWebhookConfiguration
	err := r.Client.Get(ctx, client.ObjectKey{Name: ConfigurationName}, &have)
	switch {
	case apierrors.IsNotFound(err) && len(rules) == 0:
		return nil
	case apierrors.IsNotFound(err):
		return r.Client.Create(ctx, want)
	case err != nil:
		return err
	case len(rules) == 0:
		return client.IgnoreNotFound(r.Client.Delete(ctx, &have))
	}
	have.Webhooks = want.Webhooks
	return r.Client.Update(ctx, &have)
}

// versions finds the served version of each resource; all means every namespaced resource the server has.
func (r *Reconciler) versions(resources []schema.GroupResource, all bool) ([]schema.GroupVersionResource, error) {
	var out []schema.GroupVersionResource
	if all {
		lists, err := discovery.ServerPreferredNamespacedResources(r.Discovery)
		if err != nil && len(lists) == 0 {
			return nil, err
		}
		for _, list := range lists {
			gv, err := schema.ParseGroupVersion(list.GroupVersion)
			if err != nil {
				continue
			}
			for _, res := range list.APIResources {
				verbs := sets.New(res.Verbs...)
				if verbs.HasAll("list", "watch", "patch") {
					out = append(out, gv.WithResource(res.Name))
				}
			}
		}
		return out, nil
	}
	for _, gr := range resources {
		gvr, err := r.Mapper.ResourceFor(gr.WithVersion(""))
		if err != nil {
			return nil, fmt.Errorf("resource %s: %w", gr, err)
		}
		out = append(out, gvr)
	}
	return out, nil
}
