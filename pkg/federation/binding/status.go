package binding

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/override"
	"github.com/fedmesh/fedmesh/pkg/federation/rendering"
)

// outcome is what a reconcile learned about a binding's Works.
type outcome struct {
	// templateMissing is set when the template could not be found.
	templateMissing string
	// renderErrors are the clusters whose Work could not be rendered; their previous Work, if any, stays (but for
	// a cluster being deleted, clusterLeavingError).
	renderErrors map[string]error
	// missingDeps are dependencies of the template that do not exist, as "Kind namespace/name".
	missingDeps []string
	// works are the binding's current Works by cluster.
	works map[string]*workv1alpha1.Work
	// unseen are the clusters whose Work exists in the API server but not yet in the cache.
	unseen []string
	// deleting are the target clusters whose Work is being deleted: they get no Work until it is gone.
	deleting []string
}

// rendered is o as the binding-status stage judges b's FullyApplied condition by it: the failures in the order of
// b's target clusters, and the generation of each target's Work as this pass left it.
func (o outcome) rendered(b *workv1alpha1.ResourceBinding) rendering.Outcome {
	out := rendering.Outcome{Generation: b.Generation, TemplateMissing: o.templateMissing, MissingDeps: o.missingDeps, Works: map[string]int64{}}
	for _, tc := range b.Spec.Clusters {
		if err, failed := o.renderErrors[tc.Name]; failed {
			var pe *override.PolicyError
			var leaving clusterLeavingError
			out.Failed = append(out.Failed, rendering.Failure{Cluster: tc.Name, Message: err.Error(),
				InvalidPolicy: errors.As(err, &pe) && pe.Invalid, Leaving: errors.As(err, &leaving), NoWork: o.works[tc.Name] == nil})
			continue
		}
		if w := o.works[tc.Name]; w != nil {
			out.Works[tc.Name] = w.Generation
		}
	}
	return out
}

// clusterLeavingError is why a cluster being deleted gets no Work: its previous one goes, with what it applied in
// the member, while the cluster's credentials are still there.
type clusterLeavingError string

func (e clusterLeavingError) Error() string {
	return fmt.Sprintf("cluster %s is being deleted; its Work goes", string(e))
}

// problemShown reports whether b's FullyApplied condition already tells of the problem (reason and message, as
// rendering.Outcome.Problem gives them) a pass found. That condition's message is the problem's, followed, after
// "; ", by the clusters that have yet to apply.
func problemShown(b *workv1alpha1.ResourceBinding, reason, message string) bool {
	c := meta.FindStatusCondition(b.Status.Conditions, workv1alpha1.ConditionFullyApplied)
	return c != nil && c.Status == metav1.ConditionFalse && c.Reason == reason &&
		(c.Message == message || strings.HasPrefix(c.Message, message+"; "))
}
