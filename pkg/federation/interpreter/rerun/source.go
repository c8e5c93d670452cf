package rerun

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/workrecord"
)

// Bindings is a source that, on each change n tells of, queues the ResourceBindings reader holds (the manager's
// cache: a shard's holds only its own) whose template's kind the change affects for one of ops.
func Bindings(n *Notifier, reader client.Reader, ops ...interpreter.Operation) source.Source {
	return fromList(n, "bindings", func(ctx context.Context, a interpreter.Affected) ([]reconcile.Request, error) {
		var list workv1alpha1.ResourceBindingList
		if err := reader.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil { // only read
			return nil, err
		}
		return BindingsAffected(list.Items, a, ops...), nil
	})
}

// Works is a source that, on each change n tells of, queues the Works reader holds (the manager's cache) that
// carry a manifest of a kind the change affects for one of ops. Only Works labelled with their cluster, the ones the
// stages take: a Work without the label is not the federation's.
func Works(n *Notifier, reader client.Reader, ops ...interpreter.Operation) source.Source {
	return fromList(n, "works", func(ctx context.Context, a interpreter.Affected) ([]reconcile.Request, error) {
		var list workv1alpha1.WorkList
		if err := reader.List(ctx, &list, client.HasLabels{names.ClusterLabel}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		return WorksAffected(list.Items, a, ops...), nil
	})
}

// fromList subscribes, once the controller starts it, a function queueing what list finds for each change.
func fromList(n *Notifier, what string, list func(context.Context, interpreter.Affected) ([]reconcile.Request, error)) source.Source {
	return source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		cancel := n.Subscribe(func(a interpreter.Affected) {
			reqs, err := list(ctx, a)
			if err != nil {
				// The cache lists without failing once synced; a stage started without it would get no events either.
				log.FromContext(ctx).Error(err, "listing the "+what+" an interpreter change affects", "affected", a.String())
				return
			}
			for _, r := range reqs {
				q.Add(r)
			}
		})
		go func() {
			<-ctx.Done()
			cancel()
		}()
		return nil
	})
}

// BindingsAffected are the requests of the bindings whose template's kind a affects for one of ops.
func BindingsAffected(bindings []workv1alpha1.ResourceBinding, a interpreter.Affected, ops ...interpreter.Operation) []reconcile.Request {
	var out []reconcile.Request
	for i := range bindings {
		b := &bindings[i]
		gv, err := schema.ParseGroupVersion(b.Spec.Resource.APIVersion)
		if err != nil {
			continue
		}
		if a.Matches(schema.GroupKind{Group: gv.Group, Kind: b.Spec.Resource.Kind}, ops...) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: b.Namespace, Name: b.Name}})
		}
	}
	return out
}

// WorksAffected are the requests of the Works with a manifest of a kind a affects for one of ops.
func WorksAffected(works []workv1alpha1.Work, a interpreter.Affected, ops ...interpreter.Operation) []reconcile.Request {
	var out []reconcile.Request
	for i := range works {
		w := &works[i]
		for _, ref := range workrecord.Refs(w.Spec.Workload.Manifests) {
			gv, err := schema.ParseGroupVersion(ref.APIVersion)
			if err != nil {
				continue
			}
			if a.Matches(schema.GroupKind{Group: gv.Group, Kind: ref.Kind}, ops...) {
				out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: w.Namespace, Name: w.Name}})
				break
			}
		}
	}
	return out
}
