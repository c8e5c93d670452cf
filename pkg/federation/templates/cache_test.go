package templates

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"sigs.k8s.io/controller-runtime/pkg/client"
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

// countingReader is the API reader behind a Cache: it counts the reads that reach it, and has nothing.
type countingReader struct {
	client.Reader
	gets int
}

func (r *countingReader) Get(_ context.Context, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	r.gets++
	return apierrors.NewNotFound(schema.GroupResource{}, key.Name)
}

// TestOneVersionPerKind: a kind is watched in one version; asked for in another, its informer is replaced, and
// reads in a version no informer runs in go to the API server.
func TestOneVersionPerKind(t *testing.T) {
	v1 := schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "HorizontalPodAutoscaler"}
	v2 := schema.GroupVersionKind{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"}
	mapping := func(gvk schema.GroupVersionKind) *meta.RESTMapping {
		return &meta.RESTMapping{GroupVersionKind: gvk, Scope: meta.RESTScopeNamespace,
			Resource: gvk.GroupVersion().WithResource("horizontalpodautoscalers")}
	}
	web := &unstructured.Unstructured{}
	web.SetGroupVersionKind(v2)
	web.SetNamespace("a")
	web.SetName("web")
	d := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		mapping(v1).Resource: "HorizontalPodAutoscalerList", mapping(v2).Resource: "HorizontalPodAutoscalerList"}, web)
	api := &countingReader{}
	c := New(d, api)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = c.Start(ctx) }()

	gk := v1.GroupKind()
	c.Sync(map[schema.GroupKind]*meta.RESTMapping{gk: mapping(v1)})
	c.Sync(map[schema.GroupKind]*meta.RESTMapping{gk: mapping(v2)})
	if got, ok := c.Watched(gk); !ok || got != v2 {
		t.Errorf("watched as %v (%v), want %v", got, ok, v2)
	}
	if kinds := c.Kinds(); len(kinds) != 1 || kinds[0] != v2 {
		t.Errorf("kinds %v, want only %v", kinds, v2)
	}
	in1 := Key{GVK: v1, NamespacedName: types.NamespacedName{Namespace: "a", Name: "web"}}
	if got := c.Canonical(in1); got.GVK != v2 || got.NamespacedName != in1.NamespacedName {
		t.Errorf("canonical key of %v is %v, want it in %v", in1, got, v2)
	}
	key := client.ObjectKeyFromObject(web)
	for deadline := time.Now().Add(10 * time.Second); c.cached(v2, key) == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the informer never showed the template")
		}
	}
	if !c.Holds(Key{GVK: v2, NamespacedName: key}) {
		t.Error("the informer holds the template, Holds says not")
	}
	if c.Holds(in1) || c.Holds(Key{GVK: v2, NamespacedName: types.NamespacedName{Namespace: "a", Name: "gone"}}) {
		t.Error("Holds a template in a version no informer runs in, or one the informer lacks")
	}
	read := func(gvk schema.GroupVersionKind) {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gvk)
		_ = c.Get(ctx, key, obj)
	}
	read(v2)
	if api.gets != 0 {
		t.Errorf("a read in the version watched went to the API server")
	}
	read(v1)
	if api.gets != 1 {
		t.Errorf("a read in another version was answered by the informer of %s", v2)
	}
	c.Sync(nil)
	if got := c.Canonical(in1); got != in1 {
		t.Errorf("with no informer, the canonical key of %v is %v, want it unchanged", in1, got)
	}
	if _, ok := c.Watched(gk); ok || len(c.Kinds()) != 0 {
		t.Errorf("the informer of a kind no longer wanted runs on: %v", c.Kinds())
	}
}

// A cached claim keeps its managed fields, which tell the class its author chose from the one the host's admission
// filled in (binding's stripClaim reads them); a cached Deployment sheds them.
func TestCachedClaimKeepsManagedFields(t *testing.T) {
	pvc := schema.GroupVersionKind{Version: "v1", Kind: "PersistentVolumeClaim"}
	deploy := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	mapping := func(gvk schema.GroupVersionKind, resource string) *meta.RESTMapping {
		return &meta.RESTMapping{GroupVersionKind: gvk, Scope: meta.RESTScopeNamespace, Resource: gvk.GroupVersion().WithResource(resource)}
	}
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply,
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:storageClassName":{}}}`)}}}
	object := func(gvk schema.GroupVersionKind) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		u.SetNamespace("a")
		u.SetName("data")
		u.SetManagedFields(managed)
		return u
	}
	mappings := map[schema.GroupKind]*meta.RESTMapping{
		pvc.GroupKind():    mapping(pvc, "persistentvolumeclaims"),
		deploy.GroupKind(): mapping(deploy, "deployments"),
	}
	d := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		mappings[pvc.GroupKind()].Resource: "PersistentVolumeClaimList", mappings[deploy.GroupKind()].Resource: "DeploymentList"},
		object(pvc), object(deploy))
	c := New(d, &countingReader{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = c.Start(ctx) }()
	c.Sync(mappings)

	key := client.ObjectKey{Namespace: "a", Name: "data"}
	for _, gvk := range []schema.GroupVersionKind{pvc, deploy} {
		for deadline := time.Now().Add(10 * time.Second); c.cached(gvk, key) == nil; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the informer never showed the %s", gvk.Kind)
			}
		}
	}
	if got := c.cached(pvc, key).GetManagedFields(); len(got) != 1 || got[0].Manager != "kubectl" {
		t.Errorf("the cached claim has managed fields %v, want its own", got)
	}
	if got := c.cached(deploy, key).GetManagedFields(); len(got) != 0 {
		t.Errorf("the cached Deployment keeps managed fields %v", got)
	}
}
