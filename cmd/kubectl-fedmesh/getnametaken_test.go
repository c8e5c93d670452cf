package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/cli/fedmeshctl"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// testGetBindingNameTaken gets two kinds of one name in different groups, Istio's Gateway and the Gateway API's:
// binding names leave out the group, so both name the binding "main-gateway", which the detector gave to the
// Istio Gateway (the other was told BindingNameTaken). get of the Gateway API's must not show that binding, its
// placement and its Works as its own.
func testGetBindingNameTaken(t *testing.T, f *fedtest.Federation, hostKubeconfig string) {
	ctx := context.Background()
	if err := f.Federation.Host.InstallCRDs(ctx, "testdata/gateway-crds"); err != nil {
		t.Fatal(err)
	}
	if err := f.Host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "harbor"}}); err != nil {
		t.Fatal(err)
	}
	const istio = "networking.istio.io/v1"
	for _, apiVersion := range []string{istio, "gateway.networking.k8s.io/v1"} {
		gw := &unstructured.Unstructured{}
		gw.SetAPIVersion(apiVersion)
		gw.SetKind("Gateway")
		gw.SetNamespace("harbor")
		gw.SetName("main")
		gw.SetLabels(map[string]string{names.PropagationPolicyLabel: "gateways"})
		if err := f.Host.Create(ctx, gw); err != nil {
			t.Fatal(err)
		}
	}
	bindingName := names.Binding("Gateway", "main")
	rb := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "harbor", Name: bindingName},
		Spec: workv1alpha1.ResourceBindingSpec{
			Resource: workv1alpha1.ObjectReference{APIVersion: istio, Kind: "Gateway", Namespace: "harbor", Name: "main"},
			Clusters: []workv1alpha1.TargetCluster{{Name: "member1"}},
		},
	}
	if err := f.Host.Create(ctx, rb); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	rb.Status = workv1alpha1.ResourceBindingStatus{
		Conditions: []metav1.Condition{
			{Type: workv1alpha1.ConditionScheduled, Status: metav1.ConditionTrue, Reason: "Success", LastTransitionTime: now},
			{Type: workv1alpha1.ConditionFullyApplied, Status: metav1.ConditionTrue, Reason: "FullyApplied", LastTransitionTime: now},
		},
		AggregatedStatus: []workv1alpha1.AggregatedStatusItem{{ClusterName: "member1", Applied: true, Health: workv1alpha1.ResourceHealthy}},
	}
	if err := f.Host.Status().Update(ctx, rb); err != nil {
		t.Fatal(err)
	}
	work := &workv1alpha1.Work{
		ObjectMeta: metav1.ObjectMeta{Namespace: "harbor", Name: names.Work(bindingName, "member1"),
			Labels: map[string]string{names.BindingLabel: bindingName, names.ClusterLabel: "member1"}},
		Spec: workv1alpha1.WorkSpec{ClusterName: "member1", Workload: workv1alpha1.WorkloadTemplate{Manifests: []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{
			Raw: []byte(`{"apiVersion":"networking.istio.io/v1","kind":"Gateway","metadata":{"namespace":"harbor","name":"main"}}`)}}}}},
	}
	if err := f.Host.Create(ctx, work); err != nil {
		t.Fatal(err)
	}

	out := mustFedmesh(t, hostKubeconfig, "get", "gateways.gateway.networking.k8s.io", "main", "-n", "harbor")
	want := `Template:   gateway.networking.k8s.io/v1 Gateway harbor/main
Policy:     PropagationPolicy/gateways
Binding:    <none> (main-gateway, the binding of its name, belongs to networking.istio.io/v1 Gateway harbor/main)
Status:     <none>

CLUSTER   REPLICAS   WORK   APPLIED   HEALTH   MESSAGE`
	if trimLines(out) != want {
		t.Errorf("get of the Gateway API's Gateway:\n%s\nwant\n%s", out, want)
	}
	var v fedmeshctl.TemplateView
	if err := json.Unmarshal([]byte(mustFedmesh(t, hostKubeconfig, "get", "gateways.gateway.networking.k8s.io", "main", "-n", "harbor", "-o", "json")), &v); err != nil {
		t.Fatal(err)
	}
	if v.Binding != "" || v.FullyApplied != "" || len(v.Clusters) != 0 || len(v.Works) != 0 ||
		v.BindingHeldBy == nil || v.BindingHeldBy.Binding != bindingName || !strings.HasPrefix(v.BindingHeldBy.Template, istio+" Gateway") {
		t.Errorf("get -o json of the Gateway API's Gateway shows the Istio Gateway's binding as its own: %+v", v)
	}

	// The Istio Gateway's binding is its own.
	var own fedmeshctl.TemplateView
	if err := json.Unmarshal([]byte(mustFedmesh(t, hostKubeconfig, "get", "gateways.networking.istio.io", "main", "-n", "harbor", "-o", "json")), &own); err != nil {
		t.Fatal(err)
	}
	if own.Binding != bindingName || own.BindingHeldBy != nil || len(own.Clusters) != 1 || len(own.Works) != 1 {
		t.Errorf("get -o json of the Istio Gateway: %+v", own)
	}
}
