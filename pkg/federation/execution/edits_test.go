package execution

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestMemberEdited: a member object's changes wake its Work unless only its status (or what the server sets)
// changed.
func TestMemberEdited(t *testing.T) {
	obj := func(generation int64, mutate func(o map[string]any)) *unstructured.Unstructured {
		o := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "resourceVersion": "1", "labels": map[string]any{"app": "web"}},
			"spec":     map[string]any{"replicas": int64(2)}, "status": map[string]any{"replicas": int64(1)}}
		if generation != 0 {
			o["metadata"].(map[string]any)["generation"] = generation
		}
		if mutate != nil {
			mutate(o)
		}
		return &unstructured.Unstructured{Object: o}
	}
	md := func(o map[string]any) map[string]any { return o["metadata"].(map[string]any) }
	for _, tc := range []struct {
		name     string
		old, cur *unstructured.Unstructured
		want     bool
	}{
		{"status only", obj(3, nil), obj(3, func(o map[string]any) {
			o["status"] = map[string]any{"replicas": int64(2)}
			md(o)["resourceVersion"] = "2"
		}), false},
		{"generation", obj(3, nil), obj(4, nil), true},
		{"a label", obj(3, nil), obj(3, func(o map[string]any) { md(o)["labels"] = map[string]any{"app": "other"} }), true},
		{"an annotation", obj(3, nil), obj(3, func(o map[string]any) { md(o)["annotations"] = map[string]any{"a": "b"} }), true},
		{"no generation: status only", obj(0, nil), obj(0, func(o map[string]any) { o["status"] = map[string]any{}; md(o)["resourceVersion"] = "2" }), false},
		{"no generation: data", obj(0, nil), obj(0, func(o map[string]any) { o["spec"] = map[string]any{"replicas": int64(3)} }), true},
		{"no generation: a label", obj(0, nil), obj(0, func(o map[string]any) { md(o)["labels"] = map[string]any{} }), true},
	} {
		if got := memberEdited(tc.old, tc.cur); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
