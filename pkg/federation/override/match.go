package override

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
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
		for _, e := range affinity.FieldSelector.MatchExpressions {
			ok, err := fieldMatches(e, c)
			if err != nil || !ok {
				return false, err
			}
		}
	}
	return true, nil
}

// fieldMatches checks one field expression. A cluster spanning several zones is In when any of them is listed,
// and NotIn when none is.
func fieldMatches(e corev1.NodeSelectorRequirement, c *clusterv1alpha1.Cluster) (bool, error) {
	var have []string
	switch e.Key {
	case "provider":
		have = []string{c.Spec.Provider}
	case "region":
		have = []string{c.Spec.Region}
	case "zone":
		have = append([]string{c.Spec.Zone}, c.Spec.Zones...)
	default:
		return false, fmt.Errorf("targetCluster field selector: unknown key %q (want provider, region or zone)", e.Key)
	}
	listed := slices.ContainsFunc(have, func(v string) bool { return v != "" && slices.Contains(e.Values, v) })
	switch e.Operator {
	case corev1.NodeSelectorOpIn:
		return listed, nil
	case corev1.NodeSelectorOpNotIn:
		return !listed, nil
	default:
		return false, fmt.Errorf("targetCluster field selector: operator %q is not In or NotIn", e.Operator)
	}
}
