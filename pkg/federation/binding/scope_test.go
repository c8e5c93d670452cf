package binding

import (
	"context"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
)

// A Work holds only objects of its own namespace, and cluster-scoped ones only in the system namespace: whatever
// put another into its manifests (a dependency named elsewhere, an interpreter), that Work is not rendered.
func TestRenderKeepsManifestsInTheWorkNamespace(t *testing.T) {
	chain := interpreter.Layers{Native: native.New()}.Chain()
	binding := func(ns string) *workv1alpha1.ResourceBinding {
		return &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "b"},
			Spec: workv1alpha1.ResourceBindingSpec{Clusters: []workv1alpha1.TargetCluster{{Name: "member1"}}}}
	}
	configMap := unstr(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf, namespace: demo}\n")
	foreign := unstr(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: creds, namespace: victim}\n")
	clusterRole := unstr(t, "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: admin}\n")
	namespace := unstr(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: demo}\n")
	for _, tc := range []struct {
		name     string
		binding  *workv1alpha1.ResourceBinding
		template *unstructured.Unstructured
		deps     []*unstructured.Unstructured
		want     string // part of the error; "" means rendered
	}{
		{"a template and a dependency of the namespace", binding("demo"), configMap, []*unstructured.Unstructured{configMap}, ""},
		{"a dependency of another namespace", binding("demo"), configMap, []*unstructured.Unstructured{foreign},
			"dependency Secret victim/creds: it is in namespace victim, and a Work of namespace demo holds only objects of demo"},
		{"a cluster-scoped dependency", binding("demo"), configMap, []*unstructured.Unstructured{clusterRole},
			"dependency ClusterRole admin: it is cluster-scoped"},
		{"a template of another namespace", binding("tenant"), configMap, nil, "template ConfigMap demo/conf: it is in namespace demo"},
		{"a cluster-scoped template in the system namespace", binding(names.SystemNamespace), namespace, []*unstructured.Unstructured{clusterRole}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := renderInput{binding: tc.binding, template: tc.template, deps: tc.deps}
			w, err := render(context.Background(), in, chain, workv1alpha1.TargetCluster{Name: "member1"}, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"}})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("not rendered: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("render = %v, %v; want an error with %q", w, err, tc.want)
			}
		})
	}
}

// dependingOn is an interpreter whose every object depends on refs.
type dependingOn []interpreter.DependentObjectReference

func (dependingOn) Handles(_ schema.GroupVersionKind, op interpreter.Operation) bool {
	return op == interpreter.InterpretDependency
}

func (dependingOn) ReviseReplica(_ context.Context, obj *unstructured.Unstructured, _ int32) (*unstructured.Unstructured, error) {
	return obj, nil
}

func (d dependingOn) InterpretDependency(context.Context, *unstructured.Unstructured) ([]interpreter.DependentObjectReference, error) {
	return d, nil
}

// readingOnlyIn is a Templates reader that fails the test when asked for an object outside namespace; it finds
// nothing.
type readingOnlyIn struct {
	client.Reader
	t         *testing.T
	namespace string
}

func (r readingOnlyIn) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if key.Namespace != r.namespace {
		r.t.Errorf("read %s %s, outside the template's namespace %s", obj.GetObjectKind().GroupVersionKind().Kind, key, r.namespace)
	}
	return apierrors.NewNotFound(schema.GroupResource{}, key.Name)
}

func (r readingOnlyIn) List(_ context.Context, _ client.ObjectList, opts ...client.ListOption) error {
	var lo client.ListOptions
	lo.ApplyOptions(opts)
	if lo.Namespace != r.namespace {
		r.t.Errorf("listed namespace %q, outside the template's namespace %s", lo.Namespace, r.namespace)
	}
	return nil
}

// A customization's dependencies of another namespace are not read (whether one exists there is not the
// template author's to learn), and the binding gets no Work that would carry them.
func TestDependencyOfAnotherNamespaceIsNotPropagated(t *testing.T) {
	refs := dependingOn{
		{APIVersion: "v1", Kind: "ConfigMap", Name: "conf"},
		{APIVersion: "v1", Kind: "Secret", Namespace: "victim", Name: "creds"},
		{APIVersion: "v1", Kind: "Secret", Namespace: "victim", LabelSelector: &metav1.LabelSelector{}},
	}
	template := unstr(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: demo}\n")
	r := &Reconciler{Interpreter: refs}
	r.Templates = readingOnlyIn{t: t, namespace: "demo"}
	deps, missing, err := r.dependencies(context.Background(), types.NamespacedName{Namespace: "demo", Name: "app-configmap"}, template)
	if err != nil {
		t.Fatal(err)
	}
	has := func(prefix string) bool {
		return slices.ContainsFunc(missing, func(m string) bool { return strings.HasPrefix(m, prefix) })
	}
	if len(missing) != 3 || !has("ConfigMap demo/conf") || !has("Secret victim/creds (not propagated") || !has("Secret victim/<none> (not propagated") {
		t.Errorf("missing %v, want the ConfigMap of the template's namespace, and the Secrets of namespace victim not propagated", missing)
	}
	if len(deps) != 0 {
		t.Errorf("dependencies %v, want none read", deps)
	}
	b := &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "app-configmap"}}
	w, err := render(context.Background(), renderInput{binding: b, template: template, deps: deps}, refs,
		workv1alpha1.TargetCluster{Name: "member1"}, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"}})
	if err != nil || len(w.Spec.Workload.Manifests) != 1 {
		t.Errorf("render: %v; want the template alone to go out", err)
	}
}
