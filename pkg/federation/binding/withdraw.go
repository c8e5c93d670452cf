package binding

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

// dependencyRetry is how soon a pass that could not find the template's dependencies is tried again: nothing tells
// the binding when the interpreter answers again, and the error backoff would grow to many minutes over an outage.
const dependencyRetry = 30 * time.Second

// withdraw deletes the Works of clusters b no longer targets. While the template's dependencies cannot be found
// (hold), the target clusters cannot be re-rendered to take over what those Works run, so they stay, but for those
// of a cluster that is gone or being deleted (unjoin waits for its Works to go).
func (r *Reconciler) withdraw(ctx context.Context, b *workv1alpha1.ResourceBinding, untargeted []*workv1alpha1.Work, hold bool) error {
	for _, w := range untargeted {
		why := "is no longer targeted"
		if hold {
			var cluster clusterv1alpha1.Cluster
			err := r.Client.Get(ctx, types.NamespacedName{Name: w.Spec.ClusterName}, &cluster)
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				return err
			case cluster.DeletionTimestamp.IsZero():
				log.FromContext(ctx).V(1).Info("kept the Work of a cluster no longer targeted until the dependencies are found",
					"work", w.Name, "cluster", w.Spec.ClusterName)
				continue
			default:
				why = "is being deleted"
			}
		}
		if err := r.deleteWork(ctx, b, w, why); err != nil {
			return err
		}
	}
	return nil
}

// deleteWork deletes Work w of binding b, whose cluster `why`.
func (r *Reconciler) deleteWork(ctx context.Context, b *workv1alpha1.ResourceBinding, w *workv1alpha1.Work, why string) error {
	if err := r.Client.Delete(ctx, w); client.IgnoreNotFound(err) != nil {
		return err
	}
	log.FromContext(ctx).Info("deleted Work of a cluster that "+why, "work", w.Name, "cluster", w.Spec.ClusterName)
	r.event(b, corev1.EventTypeNormal, "WorkDeleted", "deleted Work %s: cluster %s %s", w.Name, w.Spec.ClusterName, why)
	return nil
}
