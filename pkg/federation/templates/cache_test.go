package templates

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestSpecOrMetaChanged(t *testing.T) {
	old := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"namespace": "a", "name": "web", "resourceVersion": "1"}}}
	_ = unstructured.SetNestedField(old.Object, int64(3), "spec", "replicas")
	statusOnly := old.DeepCopy()
	statusOnly.SetResourceVersion("2")
	_ = unstructured.SetNestedField(statusOnly.Object, int64(3), "status", "readyReplicas")
	if specOrMetaChanged(old, statusOnly) {
		t.Error("a status write counts as a change")
	}
	scaled := old.DeepCopy()
	_ = unstructured.SetNestedField(scaled.Object, int64(5), "spec", "replicas")
	relabelled := old.DeepCopy()
	relabelled.SetLabels(map[string]string{"x": "y"})
	if !specOrMetaChanged(old, scaled) || !specOrMetaChanged(old, relabelled) {
		t.Error("a spec or label change is missed")
	}
}
