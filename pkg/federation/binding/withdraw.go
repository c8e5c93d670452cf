package binding

import (
	"cmp"
	"context"
	"errors"
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

// errNoCluster is why a cluster that does not exist gets no Work.
var errNoCluster = errors.New("does not exist")

// takeoverUnwritten reports whether a target cluster that has no Work yet could not be rendered one (an
// interpreter or an override failing): the untargeted Works may run what it is to take over. Not for a cluster that
// keeps its previous Work (a standing override failure there must not pin every cluster removed later), nor one
// that does not exist or is being deleted, nor one left without a name: those take nothing over, and can last for
// good.
func takeoverUnwritten(o *outcome) bool {
	for c, err := range o.renderErrors {
		if o.works[c] != nil {
			continue
		}
		var leaving clusterLeavingError
		if !errors.As(err, &leaving) && !errors.Is(err, errNoCluster) && !errors.Is(err, errNamesHeld) {
			return true
		}
	}
	return false
}

// keptRecheck is how soon a pass that kept untargeted Works looks again: no event tells when what held them (an
// interpreter webhook down) is gone. 0 when none were kept.
func keptRecheck(kept int, retry time.Duration) time.Duration {
	if kept == 0 {
		return 0
	}
	return cmp.Or(retry, dependencyRetry)
}

// withdraw deletes the Works of clusters b no longer targets, and returns how many it kept. While the pass could
// not write the target clusters' Works (hold: the template's dependencies not found, a target's Work not rendered,
// or another failure), those cannot take over what the untargeted Works run, so these stay, but for those of a
// cluster that is gone or being deleted (unjoin waits for its Works to go) and those an eviction task purges at
// once (evicting says false: purgeMode Directly, for a workload that must not run twice).
func (r *Reconciler) withdraw(ctx context.Context, b *workv1alpha1.ResourceBinding, untargeted []*workv1alpha1.Work, hold bool,
	evicting map[string]bool) (kept int, _ error) {
	for _, w := range untargeted {
		why := "is no longer targeted"
		if _, purged := evicting[w.Spec.ClusterName]; hold && !purged {
			var cluster clusterv1alpha1.Cluster
			err := r.Client.Get(ctx, types.NamespacedName{Name: w.Spec.ClusterName}, &cluster)
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				return kept, err
			case cluster.DeletionTimestamp.IsZero():
				log.FromContext(ctx).Info("kept the Work of a cluster no longer targeted until the target clusters' Works are written",
					"work", w.Name, "cluster", w.Spec.ClusterName)
				kept++
				continue
			default:
				why = "is being deleted"
			}
		}
		if err := r.deleteWork(ctx, b, w, why); err != nil {
			return kept, err
		}
	}
	return kept, nil
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
