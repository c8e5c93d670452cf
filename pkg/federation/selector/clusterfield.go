package selector

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
)

// ClusterFields are the fields of a member cluster that the fieldSelector of a cluster affinity reads, for
// placement (the scheduler) and for override rules' targetCluster alike.
type ClusterFields struct {
	Provider string
	Region   string
	// Zones are every zone the cluster spans: spec.zone and spec.zones together.
	Zones []string
}

// ClusterFieldsOf reads c's fields.
func ClusterFieldsOf(c *clusterv1alpha1.Cluster) ClusterFields {
	f := ClusterFields{Provider: c.Spec.Provider, Region: c.Spec.Region}
	for _, z := range append([]string{c.Spec.Zone}, c.Spec.Zones...) {
		if z != "" && !slices.Contains(f.Zones, z) {
			f.Zones = append(f.Zones, z)
		}
	}
	return f
}

// Match evaluates one fieldSelector expression (key provider, region or zone; operator In or NotIn) as Karmada
// does: In needs the cluster to have the field and every value it has listed, so a cluster spanning zones z1 and z2
// is not In [z1] (part of it is elsewhere); NotIn needs none of its values listed, and holds for a cluster without
// the field.
func (f ClusterFields) Match(e corev1.NodeSelectorRequirement) (bool, error) {
	var have []string
	switch e.Key {
	case "provider", "region":
		v := f.Provider
		if e.Key == "region" {
			v = f.Region
		}
		if v != "" {
			have = []string{v}
		}
	case "zone":
		have = f.Zones
	default:
		return false, fmt.Errorf("field selector key %q is not provider, region or zone", e.Key)
	}
	listed := func(v string) bool { return slices.Contains(e.Values, v) }
	switch e.Operator {
	case corev1.NodeSelectorOpIn:
		return len(have) > 0 && !slices.ContainsFunc(have, func(v string) bool { return !listed(v) }), nil
	case corev1.NodeSelectorOpNotIn:
		return !slices.ContainsFunc(have, listed), nil
	default:
		return false, fmt.Errorf("field selector operator %q is not In or NotIn", e.Operator)
	}
}
