package status

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
)

// StatusAggregator folds per-cluster statuses into a template's; the interpreter chain is one.
type StatusAggregator interface {
	Handles(gvk schema.GroupVersionKind, op interpreter.Operation) bool
	AggregateStatus(ctx context.Context, obj *unstructured.Unstructured, items []workv1alpha1.AggregatedStatusItem) (*unstructured.Unstructured, error)
}

// BindingReconciler writes each ResourceBinding's aggregatedStatus from its Works, and the template's status
// from that.
type BindingReconciler struct {
	// Client reads bindings, Works, Clusters and templates, and writes their status, in the host.
	Client     client.Client
	Aggregator StatusAggregator
	// Discovery of the host tells which template kinds have a status subresource; from the manager's config when nil.
	Discovery discovery.DiscoveryInterface

	mu sync.Mutex
	// statusSubresource caches, per template resource, whether it has a status subresource.
	statusSubresource map[schema.GroupVersionResource]bool
}

// SetupWithManager registers the controller: ResourceBindings, their Works, and Clusters (whose readiness
// changes what their items say).
func (r *BindingReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Discovery == nil {
		dc, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
		if err != nil {
			return err
		}
		r.Discovery = dc
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("binding-status").
		For(&workv1alpha1.ResourceBinding{}).
		Watches(&workv1alpha1.Work{}, handler.EnqueueRequestsFromMapFunc(bindingOfWork)).
		Watches(&clusterv1alpha1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.bindingsOnCluster)).
		Complete(r)
}

func bindingOfWork(_ context.Context, obj client.Object) []reconcile.Request {
	name := names.BindingOf(obj)
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}}}
}

func (r *BindingReconciler) bindingsOnCluster(ctx context.Context, obj client.Object) []reconcile.Request {
	var works workv1alpha1.WorkList
	if err := r.Client.List(ctx, &works, client.MatchingLabels{names.ClusterLabel: obj.GetName()}); err != nil {
		log.FromContext(ctx).Error(err, "list Works of cluster", "cluster", obj.GetName())
		return nil
	}
	seen := map[reconcile.Request]bool{}
	var reqs []reconcile.Request
	for i := range works.Items {
		for _, req := range bindingOfWork(ctx, &works.Items[i]) {
			if !seen[req] {
				seen[req] = true
				reqs = append(reqs, req)
			}
		}
	}
	return reqs
}

// Reconcile restates one binding's aggregatedStatus and its template's status.
func (r *BindingReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var rb workv1alpha1.ResourceBinding
	if err := r.Client.Get(ctx, req.NamespacedName, &rb); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var works workv1alpha1.WorkList
	if err := r.Client.List(ctx, &works, client.InNamespace(rb.Namespace), client.MatchingLabels{names.BindingLabel: names.LabelValue(rb.Name)}); err != nil {
		return ctrl.Result{}, err
	}
	ready := map[string]bool{}
	var clusters clusterv1alpha1.ClusterList
	if err := r.Client.List(ctx, &clusters); err != nil {
		return ctrl.Result{}, err
	}
	for i := range clusters.Items {
		ready[clusters.Items[i].Name] = clusterReady(&clusters.Items[i])
	}
	items := aggregatedItems(rb.Spec.Clusters, works.Items, func(c string) bool { return ready[c] })
	if err := r.writeItems(ctx, &rb, items); err != nil {
		return ctrl.Result{}, err
	}
	if !rb.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, r.reflectToTemplate(ctx, &rb, items)
}

// writeItems sets the binding's aggregatedStatus when it changed, touching nothing else.
func (r *BindingReconciler) writeItems(ctx context.Context, rb *workv1alpha1.ResourceBinding, items []workv1alpha1.AggregatedStatusItem) error {
	if itemsEqual(rb.Status.AggregatedStatus, items) {
		return nil
	}
	key := client.ObjectKeyFromObject(rb)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cur workv1alpha1.ResourceBinding
		if err := r.Client.Get(ctx, key, &cur); err != nil {
			return client.IgnoreNotFound(err)
		}
		if itemsEqual(cur.Status.AggregatedStatus, items) {
			return nil
		}
		cur.Status.AggregatedStatus = items
		return client.IgnoreNotFound(r.Client.Status().Update(ctx, &cur))
	})
}

// reflectToTemplate writes the template's status from items through the interpreter, when its kind has a status
// subresource and an aggregation, and the status changed.
func (r *BindingReconciler) reflectToTemplate(ctx context.Context, rb *workv1alpha1.ResourceBinding, items []workv1alpha1.AggregatedStatusItem) error {
	ref := rb.Spec.Resource
	gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
	if !r.Aggregator.Handles(gvk, interpreter.AggregateStatus) {
		return nil
	}
	has, err := r.hasStatus(gvk)
	if err != nil || !has {
		return err
	}
	key := types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		tpl := &unstructured.Unstructured{}
		tpl.SetGroupVersionKind(gvk)
		if err := r.Client.Get(ctx, key, tpl); err != nil {
			return client.IgnoreNotFound(err)
		}
		if ref.UID != "" && tpl.GetUID() != ref.UID {
			return nil // a new template of the same name; its binding will be rebuilt
		}
		out, err := r.Aggregator.AggregateStatus(ctx, tpl, items)
		if err != nil {
			return fmt.Errorf("aggregate status of %s %s: %w", ref.Kind, key, err)
		}
		if equality.Semantic.DeepEqual(tpl.Object["status"], out.Object["status"]) {
			return nil
		}
		err = r.Client.Status().Update(ctx, out)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

// hasStatus reports whether gvk's resource in the host has a status subresource.
func (r *BindingReconciler) hasStatus(gvk schema.GroupVersionKind) (bool, error) {
	mapping, err := r.Client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return false, err
	}
	gvr := mapping.Resource
	r.mu.Lock()
	has, known := r.statusSubresource[gvr]
	r.mu.Unlock()
	if known {
		return has, nil
	}
	list, err := r.Discovery.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if err != nil {
		return false, err
	}
	for _, res := range list.APIResources {
		if res.Name == gvr.Resource+"/status" {
			has = true
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.statusSubresource == nil {
		r.statusSubresource = map[schema.GroupVersionResource]bool{}
	}
	r.statusSubresource[gvr] = has
	return has, nil
}
