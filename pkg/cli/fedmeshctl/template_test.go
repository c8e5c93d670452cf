package fedmeshctl

import (
	"bytes"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
)

// webTemplate is the Deployment shop/web, claimed by the policy web.
func webTemplate() *unstructured.Unstructured {
	tmpl := &unstructured.Unstructured{}
	tmpl.SetAPIVersion("apps/v1")
	tmpl.SetKind("Deployment")
	tmpl.SetNamespace("shop")
	tmpl.SetName("web")
	tmpl.SetUID("web-uid")
	tmpl.SetLabels(map[string]string{names.PropagationPolicyLabel: "web"})
	return tmpl
}

// appliedWork is the Work of the binding web-deployment for member1, applied.
func appliedWork() workv1alpha1.Work {
	return workv1alpha1.Work{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-deployment-member1", Labels: map[string]string{names.BindingLabel: "web-deployment"}},
		Spec:       workv1alpha1.WorkSpec{ClusterName: "member1"},
		Status: workv1alpha1.WorkStatus{Conditions: []metav1.Condition{{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionTrue,
			Reason: "Applied", LastTransitionTime: metav1.Now()}}},
	}
}

// A binding whose Works cannot be brought up to date (a dependency missing, an override failing, no cluster
// fitting) keeps its previous Works applied, so every cluster's row says Applied True: the binding's condition
// must say why, in the table and in -o json alike.
func TestTemplateViewTellsWhyABindingFails(t *testing.T) {
	for _, tc := range []struct {
		name     string
		clusters []workv1alpha1.TargetCluster
		cond     metav1.Condition
		line     string
	}{
		{"dependency missing", []workv1alpha1.TargetCluster{{Name: "member1", Replicas: 3}},
			metav1.Condition{Type: workv1alpha1.ConditionFullyApplied, Status: metav1.ConditionFalse, Reason: "DependencyNotFound",
				Message: "dependencies not found: ConfigMap shop/web-settings"},
			"            FullyApplied=False (DependencyNotFound): dependencies not found: ConfigMap shop/web-settings\n"},
		{"override failing", []workv1alpha1.TargetCluster{{Name: "member1", Replicas: 3}},
			metav1.Condition{Type: workv1alpha1.ConditionFullyApplied, Status: metav1.ConditionFalse, Reason: "RenderFailed",
				Message: "member1: overrider images: no container web-sidecar (its previous Work is kept)"},
			"            FullyApplied=False (RenderFailed): member1: overrider images: no container web-sidecar (its previous Work is kept)\n"},
		{"unschedulable", nil,
			metav1.Condition{Type: workv1alpha1.ConditionScheduled, Status: metav1.ConditionFalse, Reason: "Unschedulable",
				Message: "0/2 clusters are available: member1: taint cluster.fedmesh.io/not-ready not tolerated"},
			"            Scheduled=False (Unschedulable): 0/2 clusters are available: member1: taint cluster.fedmesh.io/not-ready not tolerated\n"},
		{"pending without a message", []workv1alpha1.TargetCluster{{Name: "member1", Replicas: 3}},
			metav1.Condition{Type: workv1alpha1.ConditionFullyApplied, Status: metav1.ConditionFalse, Reason: "Pending"},
			"            FullyApplied=False (Pending)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cond.LastTransitionTime = metav1.Now()
			rb := &workv1alpha1.ResourceBinding{
				ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-deployment"},
				Spec: workv1alpha1.ResourceBindingSpec{Replicas: 3, Clusters: tc.clusters,
					Resource: workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"}},
				Status: workv1alpha1.ResourceBindingStatus{Conditions: []metav1.Condition{tc.cond}},
			}
			var works []workv1alpha1.Work
			if len(tc.clusters) > 0 {
				rb.Status.AggregatedStatus = []workv1alpha1.AggregatedStatusItem{{ClusterName: "member1", Applied: true, Health: workv1alpha1.ResourceHealthy}}
				works = []workv1alpha1.Work{appliedWork()}
			}
			v := NewTemplateView(webTemplate(), rb, works)
			var out bytes.Buffer
			if err := WriteTemplate(&out, v); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), "(Scheduled=") || !strings.Contains(out.String(), ")\n"+tc.line+"Replicas:") {
				t.Errorf("get of a binding with %s=%s %s: want the line\n%swhere the binding is named, got\n%s", tc.cond.Type, tc.cond.Status, tc.cond.Reason, tc.line, out.String())
			}
			var data bytes.Buffer
			if err := WriteData(&data, OutputJSON, v); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(data.String(), tc.cond.Reason) || !strings.Contains(data.String(), tc.cond.Message) {
				t.Errorf("get -o json of a binding with %s=%s %s does not say why:\n%s", tc.cond.Type, tc.cond.Status, tc.cond.Reason, data.String())
			}
		})
	}

	// Both conditions True: nothing more to say.
	now := metav1.Now()
	rb := &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-deployment"},
		Spec: workv1alpha1.ResourceBindingSpec{Resource: workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"}},
		Status: workv1alpha1.ResourceBindingStatus{Conditions: []metav1.Condition{
			{Type: workv1alpha1.ConditionScheduled, Status: metav1.ConditionTrue, Reason: "Success", Message: "scheduled", LastTransitionTime: now},
			{Type: workv1alpha1.ConditionFullyApplied, Status: metav1.ConditionTrue, Reason: "FullyApplied", Message: "applied", LastTransitionTime: now}}}}
	var out bytes.Buffer
	if err := WriteTemplate(&out, NewTemplateView(webTemplate(), rb, nil)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "(Scheduled=True, FullyApplied=True)\nReplicas:") {
		t.Errorf("a binding scheduled and applied:\n%s", out.String())
	}
}

// Binding names leave out the group: Istio's Gateway shop/main and the Gateway API's have one binding name, which
// the detector gives to one of them and refuses the other (BindingNameTaken). A template whose name's binding is
// another template's (or an earlier one's of its name, by UID) has no binding, placement or Works of its own.
func TestTemplateViewOfABindingOfAnotherTemplate(t *testing.T) {
	gateway := func(apiVersion string) *unstructured.Unstructured {
		gw := &unstructured.Unstructured{}
		gw.SetAPIVersion(apiVersion)
		gw.SetKind("Gateway")
		gw.SetNamespace("shop")
		gw.SetName("main")
		gw.SetUID(types.UID(apiVersion))
		return gw
	}
	binding := func(ref workv1alpha1.ObjectReference) *workv1alpha1.ResourceBinding {
		return &workv1alpha1.ResourceBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "main-gateway"},
			Spec:       workv1alpha1.ResourceBindingSpec{Resource: ref, Clusters: []workv1alpha1.TargetCluster{{Name: "member1"}}},
			Status: workv1alpha1.ResourceBindingStatus{
				Conditions:       []metav1.Condition{{Type: workv1alpha1.ConditionFullyApplied, Status: metav1.ConditionTrue}},
				AggregatedStatus: []workv1alpha1.AggregatedStatusItem{{ClusterName: "member1", Applied: true, Health: workv1alpha1.ResourceHealthy}},
			},
		}
	}
	istio := workv1alpha1.ObjectReference{APIVersion: "networking.istio.io/v1", Kind: "Gateway", Namespace: "shop", Name: "main"}
	works := []workv1alpha1.Work{{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "main-gateway-member1",
		Labels: map[string]string{names.BindingLabel: "main-gateway"}}, Spec: workv1alpha1.WorkSpec{ClusterName: "member1"}}}

	for _, tc := range []struct {
		name   string
		tmpl   *unstructured.Unstructured
		ref    workv1alpha1.ObjectReference
		heldBy string // "" when the binding is the template's
	}{
		{"its own", gateway("networking.istio.io/v1"), istio, ""},
		{"its own, read in another version", gateway("networking.istio.io/v1beta1"), istio, ""},
		{"its own, by UID", gateway("networking.istio.io/v1"), withUID(istio, "networking.istio.io/v1"), ""},
		{"another group's", gateway("gateway.networking.k8s.io/v1"), istio, "networking.istio.io/v1 Gateway shop/main"},
		{"another namespace's", gateway("networking.istio.io/v1"), withNamespace(istio, "mall"), "networking.istio.io/v1 Gateway mall/main"},
		{"an earlier template's of its name", gateway("networking.istio.io/v1"), withUID(istio, "gone"),
			"networking.istio.io/v1 Gateway shop/main (uid gone)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := NewTemplateView(tc.tmpl, binding(tc.ref), works)
			var out bytes.Buffer
			if err := WriteTemplate(&out, v); err != nil {
				t.Fatal(err)
			}
			if tc.heldBy == "" {
				if v.Binding != "main-gateway" || v.BindingHeldBy != nil || len(v.Clusters) != 1 || len(v.Works) != 1 {
					t.Errorf("the template's own binding: %+v", v)
				}
				return
			}
			if v.Binding != "" || v.FullyApplied != "" || len(v.Clusters) != 0 || len(v.Works) != 0 {
				t.Errorf("another template's binding shown as the template's own: binding %q, FullyApplied %q, clusters %+v, works %+v",
					v.Binding, v.FullyApplied, v.Clusters, v.Works)
			}
			if v.BindingHeldBy == nil || *v.BindingHeldBy != (HeldBinding{Binding: "main-gateway", Template: tc.heldBy}) {
				t.Errorf("held by %+v, want main-gateway of %s", v.BindingHeldBy, tc.heldBy)
			}
			want := "Binding:    <none> (main-gateway, the binding of its name, belongs to " + tc.heldBy + ")\n"
			if !strings.Contains(out.String(), want) || strings.Contains(out.String(), "member1") {
				t.Errorf("got\n%swant the line\n%s", out.String(), want)
			}
		})
	}
}

func withUID(ref workv1alpha1.ObjectReference, uid types.UID) workv1alpha1.ObjectReference {
	ref.UID = uid
	return ref
}

func withNamespace(ref workv1alpha1.ObjectReference, namespace string) workv1alpha1.ObjectReference {
	ref.Namespace = namespace
	return ref
}

// No stage writes a Work's Available condition; get derives it from the health the member reported of each of the
// Work's manifests.
func TestWorkViewAvailable(t *testing.T) {
	status := func(ordinal int32, h workv1alpha1.ResourceHealth) workv1alpha1.ManifestStatus {
		return workv1alpha1.ManifestStatus{Identifier: workv1alpha1.ResourceIdentifier{Ordinal: ordinal}, Health: h}
	}
	healthy, unhealthy, unknown := workv1alpha1.ResourceHealthy, workv1alpha1.ResourceUnhealthy, workv1alpha1.ResourceUnknown
	for _, tc := range []struct {
		name      string
		manifests int
		statuses  []workv1alpha1.ManifestStatus
		want      string
	}{
		{"every manifest healthy", 2, []workv1alpha1.ManifestStatus{status(0, healthy), status(1, healthy)}, "True"},
		{"one unhealthy", 2, []workv1alpha1.ManifestStatus{status(0, healthy), status(1, unhealthy)}, "False"},
		{"unhealthy, another not reported", 2, []workv1alpha1.ManifestStatus{status(1, unhealthy)}, "False"},
		{"one of unknown health", 2, []workv1alpha1.ManifestStatus{status(0, healthy), status(1, unknown)}, "Unknown"},
		{"one not reported yet", 2, []workv1alpha1.ManifestStatus{status(0, healthy)}, "Unknown"},
		{"nothing reported", 1, nil, "Unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := appliedWork()
			w.Spec.Workload.Manifests = make([]workv1alpha1.Manifest, tc.manifests)
			w.Status.ManifestStatuses = tc.statuses
			if got := workView(&w).Available; got != tc.want {
				t.Errorf("available %q, want %q", got, tc.want)
			}
		})
	}
}
