package labels

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fedmesh/fedmesh/pkg/shard"
)

// TestBackfillNeedsLabel: the backfill labels every namespaced object without its right label, kube-system's too
// (whose creates the webhook is not called for; its updates that drop the label are).
func TestBackfillNeedsLabel(t *testing.T) {
	obj := func(ns string, labels map[string]string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a", Labels: labels}}
	}
	tests := []struct {
		name string
		obj  metav1.Object
		want bool
	}{
		{"right", obj("shop", map[string]string{shard.BucketLabel: shard.BucketLabelValue("shop")}), false},
		{"missing", obj("shop", map[string]string{"app": "x"}), true},
		{"wrong", obj("shop", map[string]string{shard.BucketLabel: "zz"}), true},
		{"cluster-scoped", obj("", nil), false},
		{"kube-system, missing", obj("kube-system", map[string]string{"k8s-app": "kube-dns"}), true},
		{"kube-system, wrong", obj("kube-system", map[string]string{shard.BucketLabel: "zz"}), true},
	}
	for _, tt := range tests {
		if got := needsLabel(tt.obj); got != tt.want {
			t.Errorf("%s: needsLabel = %v, want %v", tt.name, got, tt.want)
		}
	}
}
