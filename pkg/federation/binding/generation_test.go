package binding

import (
	"context"
	"os"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/declarative"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
	"github.com/fedmesh/fedmesh/pkg/federation/override"
)

// TestRenderedWorkloadTellsItsTemplateGeneration renders a template of generation 3 and plays a member that applied
// the workload and settled: its reflected status must say which template generation it has, so that the template
// is reported observed only by members that have it. A member settled on the copy of generation 2 (a status read
// before the new copy reached it) must not count.
func TestRenderedWorkloadTellsItsTemplateGeneration(t *testing.T) {
	ctx := context.Background()
	chain := interpreter.Layers{Native: native.New()}.Chain()
	template := unstr(t, hostDeployment) // generation 3
	configMap := unstr(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf, namespace: demo}\ndata: {k: v}\n")
	// An override cannot take the stamp away.
	pol := policyv1alpha1.OverridePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "annotate"},
		Spec: policyv1alpha1.OverrideSpec{ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment"}}, OverrideRules: []policyv1alpha1.RuleWithCluster{{Overriders: policyv1alpha1.Overriders{
			AnnotationsOverrider: []policyv1alpha1.LabelAnnotationOverrider{{Operator: "add",
				Value: map[string]string{interpreter.TemplateGenerationAnnotation: "99", "team": "web"}}},
		}}}},
	}
	b := &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web-deployment"},
		Spec: workv1alpha1.ResourceBindingSpec{Replicas: 6}}
	cluster := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"}}
	target := workv1alpha1.TargetCluster{Name: "member1", Replicas: 6}

	// member is the member's copy rendered from the template at generation, settled: its controller observed it.
	member := func(generation int64) *unstructured.Unstructured {
		t.Helper()
		in := renderInput{binding: b, template: stripServerFields(template), deps: []*unstructured.Unstructured{configMap},
			policies: override.Policies{Namespaced: []policyv1alpha1.OverridePolicy{pol}}, generation: generation}
		w, err := render(ctx, in, chain, target, cluster)
		if err != nil {
			t.Fatal(err)
		}
		var dep unstructured.Unstructured
		if err := dep.UnmarshalJSON(w.Spec.Workload.Manifests[1].Raw); err != nil {
			t.Fatal(err)
		}
		if _, ok := dep.GetAnnotations()[interpreter.TemplateGenerationAnnotation]; ok {
			t.Errorf("dependency %s stamped with the workload's template generation", dep.GetName())
		}
		var u unstructured.Unstructured
		if err := u.UnmarshalJSON(w.Spec.Workload.Manifests[0].Raw); err != nil {
			t.Fatal(err)
		}
		u.SetGeneration(1)
		u.Object["status"] = map[string]any{"observedGeneration": int64(1), "replicas": int64(6),
			"updatedReplicas": int64(6), "readyReplicas": int64(6), "availableReplicas": int64(6)}
		return &u
	}
	observed := func(m *unstructured.Unstructured) (int64, bool) {
		t.Helper()
		reflected, err := chain.InterpretStatus(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		items := []workv1alpha1.AggregatedStatusItem{{ClusterName: "member1", Applied: true, Status: reflected, Health: workv1alpha1.ResourceHealthy}}
		out, err := chain.AggregateStatus(ctx, template, items)
		if err != nil {
			t.Fatal(err)
		}
		og, found, _ := unstructured.NestedInt64(out.Object, "status", "observedGeneration")
		return og, found
	}

	current := member(3)
	if got := current.GetAnnotations()[interpreter.TemplateGenerationAnnotation]; got != "3" {
		t.Fatalf("workload rendered from template generation 3 says %s=%q", interpreter.TemplateGenerationAnnotation, got)
	}
	if og, _ := observed(current); og != 3 {
		t.Errorf("a member settled on the copy of generation 3: template observedGeneration %d, want 3", og)
	}
	if og, found := observed(member(2)); found {
		t.Errorf("a member settled on the copy of generation 2: template observedGeneration %d, want it left as it was (none)", og)
	}
}

// TestKarmadaStatusScriptSeesTheTemplateGeneration renders a Flux Kustomization of generation 3 and has a
// customization written to the contract of Karmada's published one reflect and aggregate a member that reconciled
// it: such scripts read the template generation from the member's resourcetemplate.karmada.io/generation
// annotation, and without it the template's observedGeneration stays 0 for ever.
func TestKarmadaStatusScriptSeesTheTemplateGeneration(t *testing.T) {
	ctx := context.Background()
	data, err := os.ReadFile("../interpreter/declarative/testdata/customizations/flux-kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c configv1alpha1.ResourceInterpreterCustomization
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		t.Fatal(err)
	}
	scripts, err := declarative.New([]configv1alpha1.ResourceInterpreterCustomization{c})
	if err != nil {
		t.Fatal(err)
	}
	chain := interpreter.Layers{Customization: scripts, Native: native.New()}.Chain()
	template := unstr(t, `
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system, generation: 3, uid: "7", resourceVersion: "40"}
spec: {interval: 10m, path: ./apps, prune: true, sourceRef: {kind: GitRepository, name: fleet}}
`)
	b := &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "apps-kustomization"}}
	in := renderInput{binding: b, template: stripServerFields(template), generation: template.GetGeneration()}
	w, err := render(ctx, in, chain, workv1alpha1.TargetCluster{Name: "member1"}, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"}})
	if err != nil {
		t.Fatal(err)
	}
	// The member's copy, reconciled by its Flux.
	var m unstructured.Unstructured
	if err := m.UnmarshalJSON(w.Spec.Workload.Manifests[0].Raw); err != nil {
		t.Fatal(err)
	}
	m.SetGeneration(1)
	m.Object["status"] = map[string]any{"observedGeneration": int64(1), "lastAppliedRevision": "main@sha1:4f2c",
		"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded", "message": "applied"}}}
	reflected, err := chain.InterpretStatus(ctx, &m)
	if err != nil {
		t.Fatal(err)
	}
	out, err := chain.AggregateStatus(ctx, template, []workv1alpha1.AggregatedStatusItem{
		{ClusterName: "member1", Applied: true, Status: reflected, Health: workv1alpha1.ResourceHealthy}})
	if err != nil {
		t.Fatal(err)
	}
	if og, _, _ := unstructured.NestedInt64(out.Object, "status", "observedGeneration"); og != 3 {
		t.Fatalf("template observedGeneration %d, want 3: the member reconciled the copy of generation 3 (reflected %s)", og, reflected.Raw)
	}
}
