package main

import (
	"strings"
	"testing"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
)

func TestOtherCluster(t *testing.T) {
	for _, tc := range []struct {
		name     string
		spec     clusterv1alpha1.ClusterSpec
		want     string // a part of the answer; "" for the same cluster
		endpoint string
	}{
		{"same id", clusterv1alpha1.ClusterSpec{ID: "a", APIEndpoint: "https://old:6443"}, "", "https://new:6443"},
		{"another id", clusterv1alpha1.ClusterSpec{ID: "b", APIEndpoint: "https://x:6443"}, "id b, this one is a", "https://x:6443"},
		{"no id, same endpoint", clusterv1alpha1.ClusterSpec{APIEndpoint: "https://x:6443"}, "", "https://x:6443"},
		{"no id, another endpoint", clusterv1alpha1.ClusterSpec{APIEndpoint: "https://y:6443"}, "endpoint https://y:6443, this one is https://x:6443", "https://x:6443"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := otherCluster(&clusterv1alpha1.Cluster{Spec: tc.spec}, "a", tc.endpoint)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("otherCluster = %q, want %q", got, tc.want)
			}
		})
	}
}
