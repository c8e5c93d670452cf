package binding

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/override"
	"github.com/fedmesh/fedmesh/pkg/federation/workrecord"
)

const hostDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: demo
  uid: 1234
  resourceVersion: "99"
  generation: 3
  creationTimestamp: "2026-01-01T00:00:00Z"
  finalizers: [x/y]
  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: o, uid: "5"}]
  managedFields: [{manager: kubectl}]
  labels: {app: web}
spec:
  replicas: 6
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx:1.27}]
status: {replicas: 6}
`

func unstr(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	return obj
}

func TestStripServerFields(t *testing.T) {
	in := unstr(t, hostDeployment)
	got := stripServerFields(in)
	meta, _, _ := unstructured.NestedMap(got.Object, "metadata")
	want := map[string]any{"name": "web", "namespace": "demo", "labels": map[string]any{"app": "web"}}
	if diff := cmp.Diff(want, meta); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
	if _, ok := got.Object["status"]; ok {
		t.Error("status kept")
	}
	if in.GetResourceVersion() != "99" {
		t.Error("input changed")
	}
}

func TestRender(t *testing.T) {
	ctx := context.Background()
	chain := interpreter.Layers{Native: native.New()}.Chain()
	configMap := unstr(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf, namespace: demo}\ndata: {k: v}\n")
	b := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web-deployment"},
		Spec: workv1alpha1.ResourceBindingSpec{
			Replicas:                    6,
			PreserveResourcesOnDeletion: ptr.To(true),
			Suspension:                  &policyv1alpha1.Suspension{DispatchingOnClusters: &policyv1alpha1.SuspendClusters{ClusterNames: []string{"member2"}}},
		},
	}
	pol := policyv1alpha1.OverridePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "mirror"},
		Spec: policyv1alpha1.OverrideSpec{OverrideRules: []policyv1alpha1.RuleWithCluster{{
			TargetCluster: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1"}},
			Overriders: policyv1alpha1.Overriders{
				ImageOverrider:  []policyv1alpha1.ImageOverrider{{Component: "Registry", Operator: "add", Value: "mirror.example"}},
				LabelsOverrider: []policyv1alpha1.LabelAnnotationOverrider{{Operator: "add", Value: map[string]string{"mirrored": "yes"}}},
			},
		}}},
	}
	in := renderInput{
		binding:  b,
		template: stripServerFields(unstr(t, hostDeployment)),
		deps:     []*unstructured.Unstructured{configMap},
		policies: override.Policies{Namespaced: []policyv1alpha1.OverridePolicy{pol}},
	}
	for _, tc := range []struct {
		cluster    string
		replicas   int32
		image      string
		overrides  string
		suspended  *bool
		cmLabelled bool
	}{
		{cluster: "member1", replicas: 4, image: "mirror.example/nginx:1.27", overrides: "OverridePolicy/mirror", cmLabelled: true},
		{cluster: "member2", replicas: 2, image: "nginx:1.27", suspended: ptr.To(true)},
	} {
		w, err := render(ctx, in, chain, workv1alpha1.TargetCluster{Name: tc.cluster, Replicas: tc.replicas}, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: tc.cluster}})
		if err != nil {
			t.Fatal(err)
		}
		if w.Name != names.Work(b.Name, tc.cluster) || w.Namespace != "demo" || w.Spec.ClusterName != tc.cluster {
			t.Errorf("%s: Work %s/%s for %s", tc.cluster, w.Namespace, w.Name, w.Spec.ClusterName)
		}
		if diff := cmp.Diff(map[string]string{names.BindingLabel: b.Name, names.ClusterLabel: tc.cluster}, w.Labels); diff != "" {
			t.Errorf("%s labels (-want +got):\n%s", tc.cluster, diff)
		}
		if got := w.Annotations[AppliedOverridesAnnotation]; got != tc.overrides {
			t.Errorf("%s: applied overrides %q, want %q", tc.cluster, got, tc.overrides)
		}
		if !cmp.Equal(w.Spec.PreserveResourcesOnDeletion, ptr.To(true)) || !cmp.Equal(w.Spec.SuspendDispatching, tc.suspended) {
			t.Errorf("%s: preserve %v suspend %v", tc.cluster, w.Spec.PreserveResourcesOnDeletion, w.Spec.SuspendDispatching)
		}
		if len(w.Spec.Workload.Manifests) != 2 {
			t.Fatalf("%s: %d manifests, want the Deployment and its ConfigMap", tc.cluster, len(w.Spec.Workload.Manifests))
		}
		var d, cm unstructured.Unstructured
		_ = d.UnmarshalJSON(w.Spec.Workload.Manifests[0].Raw)
		_ = cm.UnmarshalJSON(w.Spec.Workload.Manifests[1].Raw)
		replicas, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
		containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		if d.GetKind() != "Deployment" || replicas != int64(tc.replicas) || containers[0].(map[string]any)["image"] != tc.image {
			t.Errorf("%s: first manifest %s with replicas %d, image %v", tc.cluster, d.GetKind(), replicas, containers[0].(map[string]any)["image"])
		}
		if cm.GetKind() != "ConfigMap" || (cm.GetLabels()["mirrored"] == "yes") != tc.cmLabelled {
			t.Errorf("%s: second manifest %s labels %v", tc.cluster, cm.GetKind(), cm.GetLabels())
		}
	}
	if in.template.Object["spec"].(map[string]any)["replicas"] != int64(6) {
		t.Error("render changed the template")
	}

	// Without replicas on the binding (a kind without them, or Duplicated left as is) the template keeps its own.
	b.Spec.Replicas = 0
	w, err := render(ctx, in, chain, workv1alpha1.TargetCluster{Name: "member2"}, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member2"}})
	if err != nil {
		t.Fatal(err)
	}
	var d unstructured.Unstructured
	_ = d.UnmarshalJSON(w.Spec.Workload.Manifests[0].Raw)
	if r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); r != 6 {
		t.Errorf("replicas %d, want the template's 6", r)
	}
}

// The copy a failover moved to gets the state preserved from the copy it left as labels, the workload only; an
// override applies after them.
func TestRenderPreservedState(t *testing.T) {
	ctx := context.Background()
	chain := interpreter.Layers{Native: native.New()}.Chain()
	b := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web-deployment"},
		Spec: workv1alpha1.ResourceBindingSpec{
			Clusters: []workv1alpha1.TargetCluster{{Name: "member2"}},
			GracefulEvictionTasks: []workv1alpha1.GracefulEvictionTask{{FromCluster: "member1", PurgeMode: policyv1alpha1.PurgeModeDirectly,
				ClustersBeforeFailover: []string{"member1"}, PreservedLabelState: map[string]string{"example.io/job": "j7", "app": "resumed"}}},
		},
	}
	pol := policyv1alpha1.OverridePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "relabel"},
		Spec: policyv1alpha1.OverrideSpec{OverrideRules: []policyv1alpha1.RuleWithCluster{{
			Overriders: policyv1alpha1.Overriders{LabelsOverrider: []policyv1alpha1.LabelAnnotationOverrider{
				{Operator: "replace", Value: map[string]string{"example.io/job": "overridden"}}}},
		}}},
	}
	configMap := unstr(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf, namespace: demo}\n")
	in := renderInput{binding: b, template: stripServerFields(unstr(t, hostDeployment)), deps: []*unstructured.Unstructured{configMap}}
	labelsOf := func(w *workv1alpha1.Work) []map[string]string {
		var out []map[string]string
		for _, m := range w.Spec.Workload.Manifests {
			var u unstructured.Unstructured
			_ = u.UnmarshalJSON(m.Raw)
			out = append(out, u.GetLabels())
		}
		return out
	}
	member2 := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member2"}}
	w, err := render(ctx, in, chain, b.Spec.Clusters[0], member2)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]map[string]string{{"app": "resumed", "example.io/job": "j7"}, nil}, labelsOf(w)); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if in.template.GetLabels()["app"] != "web" {
		t.Error("render changed the template")
	}
	in.policies = override.Policies{Namespaced: []policyv1alpha1.OverridePolicy{pol}}
	if w, err = render(ctx, in, chain, b.Spec.Clusters[0], member2); err != nil {
		t.Fatal(err)
	}
	if got := labelsOf(w)[0]["example.io/job"]; got != "overridden" {
		t.Errorf("after an override: %q", got)
	}
}

func TestMerge(t *testing.T) {
	desired := &workv1alpha1.Work{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{names.BindingLabel: "b", names.ClusterLabel: "m1"}},
		Spec: workv1alpha1.WorkSpec{ClusterName: "m1", Workload: workv1alpha1.WorkloadTemplate{Manifests: []workv1alpha1.Manifest{
			{RawExtension: rawJSON(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"v"}}`)},
		}}},
	}
	// As the API server hands it back: other key order and spacing, a null, another writer's label and annotation.
	stored := func() *workv1alpha1.Work {
		w := desired.DeepCopy()
		w.Labels["other"] = "x"
		w.Annotations = map[string]string{"other": "y"}
		w.Spec.Workload.Manifests[0].Raw = []byte(`{"kind":"ConfigMap", "data":{"k":"v"},"apiVersion":"v1","metadata":{"name":"a","labels":null}}`)
		return w
	}
	if changed, err := merge(stored(), desired); err != nil || changed {
		t.Errorf("unchanged Work: changed %v, %v", changed, err)
	}
	for name, edit := range map[string]func(*workv1alpha1.Work){
		"manifest":  func(w *workv1alpha1.Work) { w.Spec.Workload.Manifests[0].Raw = []byte(`{"kind":"ConfigMap"}`) },
		"label":     func(w *workv1alpha1.Work) { w.Labels[names.ClusterLabel] = "m2" },
		"overrides": func(w *workv1alpha1.Work) { w.Annotations[AppliedOverridesAnnotation] = "OverridePolicy/gone" },
		"preserve":  func(w *workv1alpha1.Work) { w.Spec.PreserveResourcesOnDeletion = ptr.To(false) },
	} {
		w := stored()
		edit(w)
		changed, err := merge(w, desired)
		if err != nil || !changed {
			t.Errorf("%s differs: changed %v, %v", name, changed, err)
			continue
		}
		if again, _ := merge(w, desired); again {
			t.Errorf("%s: merged Work still differs", name)
		}
		if w.Labels["other"] != "x" || w.Annotations["other"] != "y" {
			t.Errorf("%s: another writer's label or annotation lost", name)
		}
	}

	// A manifest dropped goes on the record, for the execution stage to remove from the member.
	w := stored()
	w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests,
		workv1alpha1.Manifest{RawExtension: rawJSON(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}`)})
	if changed, err := merge(w, desired); err != nil || !changed {
		t.Fatalf("dropped manifest: changed %v, %v", changed, err)
	}
	if got, want := w.Annotations[workrecord.Annotation], `[{"apiVersion":"v1","kind":"Secret","name":"s"}]`; got != want {
		t.Errorf("record %q, want %q", got, want)
	}
}

func rawJSON(s string) runtime.RawExtension { return runtime.RawExtension{Raw: []byte(s)} }

func TestMayBeSelected(t *testing.T) {
	ref := workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "demo", Name: "web"}
	sel := func(kind, ns, name string) []policyv1alpha1.ResourceSelector {
		return []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: kind, Namespace: ns, Name: name}}
	}
	for _, tc := range []struct {
		name      string
		selectors []policyv1alpha1.ResourceSelector
		policyNS  string
		want      bool
	}{
		{name: "no selectors", policyNS: "demo", want: true},
		{name: "kind", selectors: sel("Deployment", "", ""), policyNS: "demo", want: true},
		{name: "other kind", selectors: sel("StatefulSet", "", ""), policyNS: "demo"},
		{name: "other name", selectors: sel("Deployment", "", "api"), policyNS: "demo"},
		{name: "cluster policy, any namespace", selectors: sel("Deployment", "", "web"), want: true},
		{name: "cluster policy, other namespace", selectors: sel("Deployment", "prod", "")},
	} {
		if got := mayBeSelected(tc.selectors, tc.policyNS, ref); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
