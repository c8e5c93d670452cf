package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// The CRD refuses grades that range different resources, as Karmada's webhook does; the grades may be listed in
// any order.
func TestResourceModelsValidation(t *testing.T) {
	_, host := fedtest.Host(t)
	rng := func(name corev1.ResourceName, min, max string) clusterv1alpha1.ResourceModelRange {
		return clusterv1alpha1.ResourceModelRange{Name: name, Min: resource.MustParse(min), Max: resource.MustParse(max)}
	}
	grade := func(g int32, ranges ...clusterv1alpha1.ResourceModelRange) clusterv1alpha1.ResourceModel {
		return clusterv1alpha1.ResourceModel{Grade: g, Ranges: ranges}
	}
	tests := []struct {
		name   string
		models []clusterv1alpha1.ResourceModel
		refuse string // "": accepted
	}{
		{name: "contiguous, listed out of order", models: []clusterv1alpha1.ResourceModel{
			grade(2, rng("cpu", "2", "9223372036854775807"), rng("memory", "16Gi", "9223372036854775807")),
			grade(0, rng("cpu", "0", "1"), rng("memory", "0", "4Gi")),
			grade(1, rng("cpu", "1", "2"), rng("memory", "4Gi", "16Gi"))}},
		{name: "different resources", models: []clusterv1alpha1.ResourceModel{
			grade(0, rng("cpu", "0", "1")), grade(1, rng("memory", "1Gi", "2Gi"))}, refuse: "every grade must range the same resources"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("models%d", i)},
				Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull, ResourceModels: tt.models}}
			err := host.Create(context.Background(), c)
			switch {
			case tt.refuse == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.refuse != "" && (err == nil || !strings.Contains(err.Error(), tt.refuse)):
				t.Errorf("error %v, want one saying %q", err, tt.refuse)
			}
		})
	}
}
