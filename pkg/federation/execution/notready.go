package execution

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

// notReadyRecheck is how often the deletion of a Work whose cluster is not Ready looks at the Cluster again. The
// Cluster turning Ready, or going, brings the Work back at once (clusterCameOrWent); this catches what that does
// not pass, such as a turn to Pull mode.
const notReadyRecheck = time.Minute

// notReadyOf is the Ready condition of the Work's Cluster when it is there and not True: the cluster stage found
// the member not answering, or not ok. Its Works are not tried against it: each try would hold a worker until
// Timeout, and a frozen member (taking connections, answering none) would keep the Works of healthy members
// waiting behind its own. A Cluster with no Ready condition yet (just joined, not probed) is tried, and one that
// does not exist is left to the member client to tell of.
func (r *Reconciler) notReadyOf(ctx context.Context, cluster string) (*metav1.Condition, error) {
	var c clusterv1alpha1.Cluster
	err := r.Client.Get(ctx, types.NamespacedName{Name: cluster}, &c)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ready := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
	if ready == nil || ready.Status == metav1.ConditionTrue {
		return nil, nil
	}
	return ready, nil
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
