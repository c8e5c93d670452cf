package override

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/selector"
)

// selectsCluster reports whether affinity picks c: nil picks every cluster; otherwise c must be picked by every
// part that is set and not be excluded.
func selectsCluster(affinity *policyv1alpha1.ClusterAffinity, c *clusterv1alpha1.Cluster) (bool, error) {
	if affinity == nil {
		return true, nil
	}
	if slices.Contains(affinity.ExcludeClusters, c.Name) {
		return false, nil
	}
	if len(affinity.ClusterNames) > 0 && !slices.Contains(affinity.ClusterNames, c.Name) {
		return false, nil
	}
	if affinity.LabelSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(affinity.LabelSelector)
		if err != nil {
			return false, fmt.Errorf("targetCluster label selector: %w", err)
		}
		if !sel.Matches(labels.Set(c.Labels)) {
			return false, nil
		}
	}
	if affinity.FieldSelector != nil {
		fields := selector.ClusterFieldsOf(c)
		for _, e := range affinity.FieldSelector.MatchExpressions {
			ok, err := fields.Match(e)
			if err != nil {
				return false, fmt.Errorf("targetCluster %w", err)
			}
			if !ok {
				return false, nil
			}
		}
	}
	return true, nil
}
