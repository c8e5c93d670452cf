package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/cli/fedmeshctl"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// testGetDependency gets a ConfigMap that no policy claims but that a Deployment's binding propagates as a
// dependency: its Work carries the ConfigMap after the Deployment, as the binding stage renders it.
func testGetDependency(t *testing.T, f *fedtest.Federation, hostKubeconfig string) {
	ctx := context.Background()
	bindingName := names.Binding("Deployment", "app")
	manifest := func(obj map[string]any) workv1alpha1.Manifest {
		raw, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		return workv1alpha1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}}
	}
	meta := map[string]any{"namespace": "kitchen", "name": "app"}
	work := &workv1alpha1.Work{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kitchen", Name: names.Work(bindingName, "member1"),
			Labels: map[string]string{names.BindingLabel: bindingName, names.ClusterLabel: "member1"}},
		Spec: workv1alpha1.WorkSpec{ClusterName: "member1", Workload: workv1alpha1.WorkloadTemplate{Manifests: []workv1alpha1.Manifest{
			manifest(map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta}),
			manifest(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"namespace": "kitchen", "name": "settings"}}),
		}}},
	}
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kitchen"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kitchen", Name: "settings"}, Data: map[string]string{"a": "b"}},
		&workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "kitchen", Name: bindingName},
			Spec: workv1alpha1.ResourceBindingSpec{PropagateDeps: true,
				Resource: workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "kitchen", Name: "app"},
				Clusters: []workv1alpha1.TargetCluster{{Name: "member1", Replicas: 1}}}},
		work,
	} {
		if err := f.Host.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	work.Status = workv1alpha1.WorkStatus{
		Conditions: []metav1.Condition{{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionTrue, Reason: "Applied", LastTransitionTime: metav1.Now()}},
		ManifestStatuses: []workv1alpha1.ManifestStatus{
			{Identifier: workv1alpha1.ResourceIdentifier{Ordinal: 0, Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Namespace: "kitchen", Name: "app"}, Health: workv1alpha1.ResourceUnhealthy},
			{Identifier: workv1alpha1.ResourceIdentifier{Ordinal: 1, Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "kitchen", Name: "settings"}, Health: workv1alpha1.ResourceHealthy},
		},
	}
	if err := f.Host.Status().Update(ctx, work); err != nil {
		t.Fatal(err)
	}

	out := mustFedmesh(t, hostKubeconfig, "get", "configmap", "settings", "-n", "kitchen")
	want := `Template:   v1 ConfigMap kitchen/settings
Policy:     <none>
Binding:    <none> (no policy claimed the template; it is propagated as a dependency)
RequiredBy: app-deployment (Deployment kitchen/app)
Status:     <none>

CLUSTER   REPLICAS   WORK                     APPLIED   HEALTH    MESSAGE
member1   0          app-deployment-member1   True      Healthy   <none>`
	if trimLines(out) != want {
		t.Errorf("get of a dependency:\n%s\nwant\n%s", out, want)
	}

	var v fedmeshctl.TemplateView
	if err := json.Unmarshal([]byte(mustFedmesh(t, hostKubeconfig, "get", "cm", "settings", "-n", "kitchen", "-o", "json")), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.RequiredBy) != 1 || v.RequiredBy[0] != (fedmeshctl.Requirer{Binding: bindingName, Template: "Deployment kitchen/app"}) ||
		len(v.Works) != 1 || v.Works[0].Name != work.Name || len(v.Clusters) != 1 || !v.Clusters[0].Scheduled {
		t.Errorf("get -o json of a dependency: %+v", v)
	}

	// An object that no Work carries is neither claimed nor a dependency.
	if err := f.Host.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kitchen", Name: "unused"}}); err != nil {
		t.Fatal(err)
	}
	if out := mustFedmesh(t, hostKubeconfig, "get", "configmap", "unused", "-n", "kitchen"); !strings.Contains(out, "no policy claimed the template)\n") ||
		strings.Contains(out, "RequiredBy") {
		t.Errorf("get of an object nothing propagates:\n%s", out)
	}
}
