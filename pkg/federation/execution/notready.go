package execution

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

// notReadyOf is the Ready condition of the Work's Cluster when it is there and not True: the cluster stage found
// the member not answering, or not ok. Its Works are not tried against it: each try would hold a worker until
// Timeout, and a frozen member (taking connections, answering none) would keep the Works of healthy members
// waiting behind its own. A Cluster with no Ready condition yet (just joined, not probed) is tried, and one that
// does not exist is left to the member client to tell of.
func (r *Reconciler) notReadyOf(ctx context.Context, cluster string) (*metav1.Condition, error) {
	c, err := r.clusterOf(ctx, cluster)
	if c == nil || err != nil {
		return nil, err
	}
	return notReady(c), nil
}

// notReady is the Ready condition of c (nil: none) when it is there and not True.
func notReady(c *clusterv1alpha1.Cluster) *metav1.Condition {
	if c == nil {
		return nil
	}
	ready := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
	if ready == nil || ready.Status == metav1.ConditionTrue {
		return nil
	}
	return ready
}

// cleanupAwaits is the Ready condition the cleanup of the deleted Works of c (nil: none) waits to see True: c's
// when it is not Ready, in Push mode and not being deleted. A Cluster being deleted is not probed any more (the
// cluster stage lets it go), so its Ready would never turn: one kubectl-fedmesh unjoin holds for the cleanup is
// tried regardless, and one nothing holds is gone.
func cleanupAwaits(c *clusterv1alpha1.Cluster) *metav1.Condition {
	if c == nil || !c.DeletionTimestamp.IsZero() || c.Spec.SyncMode == clusterv1alpha1.Pull {
		return nil
	}
	return notReady(c)
}

// cleanupWaits are the deleted Works whose cleanup waits for their Cluster to be Ready, and that were told so (an
// event): each is told once per wait, not at each pass over it, which for the Works of a cluster that stays down
// would be a steady stream of event writes. A Work is known by its name and UID, so that one deleted and created
// again is told afresh; the name lets a pass that finds the Work gone forget it.
type cleanupWaits struct {
	mu    sync.Mutex
	works map[types.NamespacedName]types.UID
}

// start records that the cleanup of work waits; it reports whether the wait is new, and so to be told of.
func (w *cleanupWaits) start(work *workv1alpha1.Work) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := types.NamespacedName{Namespace: work.Namespace, Name: work.Name}
	if uid, ok := w.works[key]; ok && uid == work.UID {
		return false
	}
	if w.works == nil {
		w.works = map[types.NamespacedName]types.UID{}
	}
	w.works[key] = work.UID
	return true
}

// end forgets the wait of the Work called key, if it had one: it is cleaned up, let go, or gone.
func (w *cleanupWaits) end(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.works, key)
}

// awaitReady concludes a pass over a Work of a cluster that is not Ready without reaching the member: Applied
// False, ClusterNotReady. A Work whose current spec was applied keeps its True: its objects are still as applied,
// as far as anyone can tell, and a federator restarting while a cluster is down should not mark them otherwise.
// Either way the Work is looked at again once the Cluster turns Ready (clusterCameOrWent), not before.
func (r *Reconciler) awaitReady(work *workv1alpha1.Work, ready *metav1.Condition) (ctrl.Result, error) {
	if c := r.Verdicts.Current(work, work.Status.Conditions); c != nil && c.Status == metav1.ConditionTrue &&
		c.ObservedGeneration >= work.Generation {
		return ctrl.Result{}, nil
	}
	return r.conclude(work, []error{&notReadyError{cluster: work.Spec.ClusterName, reason: ready.Reason}})
}

// notReadyError is why a Work of a cluster that is not Ready was not tried. The Cluster's reason is in it, not its
// message, which may change with every probe and would rewrite the Work's condition each time.
type notReadyError struct{ cluster, reason string }

func (e *notReadyError) Error() string {
	return fmt.Sprintf("cluster %s is not Ready (%s): the Work is applied once it is", e.cluster, e.reason)
}
