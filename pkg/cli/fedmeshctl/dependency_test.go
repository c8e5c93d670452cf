package fedmeshctl

import (
	"bytes"
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
)

// depWork is a Work of binding for cluster whose manifests are objs ("apiVersion/Kind/namespace/name"), as the
// binding stage renders them: the workload first, then its dependencies.
func depWork(t *testing.T, binding, cluster string, objs ...[4]string) workv1alpha1.Work {
	t.Helper()
	w := workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: names.Work(binding, cluster),
		Labels: map[string]string{names.BindingLabel: names.LabelValue(binding)}}, Spec: workv1alpha1.WorkSpec{ClusterName: cluster}}
	for _, o := range objs {
		raw, err := json.Marshal(map[string]any{"apiVersion": o[0], "kind": o[1], "metadata": map[string]any{"namespace": o[2], "name": o[3]}})
		if err != nil {
			t.Fatal(err)
		}
		w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, workv1alpha1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}})
	}
	return w
}

func TestDependencyView(t *testing.T) {
	settings := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings", "namespace": "shop"}}}
	web, cm := [4]string{"apps/v1", "Deployment", "shop", "web"}, [4]string{"v1", "ConfigMap", "shop", "settings"}
	worker := [4]string{"apps/v1", "StatefulSet", "shop", "worker"}

	webMember1 := depWork(t, "web-deployment", "member1", web, [4]string{"v1", "Secret", "shop", "settings"}, cm)
	webMember1.Status = workv1alpha1.WorkStatus{
		Conditions:       []metav1.Condition{{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionTrue}},
		ManifestStatuses: []workv1alpha1.ManifestStatus{{Identifier: workv1alpha1.ResourceIdentifier{Ordinal: 2}, Health: workv1alpha1.ResourceHealthy}},
	}
	webMember3 := depWork(t, "web-deployment", "member3", web, cm) // the cluster the Deployment is leaving
	workerMember2 := depWork(t, "worker-statefulset", "member2", worker, cm)
	workerMember2.Status.Conditions = []metav1.Condition{{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionFalse, Message: "conflict"}}
	works := []workv1alpha1.Work{
		workerMember2, webMember3, webMember1,
		// Neither: the ConfigMap as a workload of its own binding, a ConfigMap of another name, a Secret of its name.
		depWork(t, "settings-configmap", "member1", cm),
		depWork(t, "web-deployment", "member2", web, [4]string{"v1", "ConfigMap", "shop", "other"}),
		depWork(t, "other-deployment", "member2", [4]string{"apps/v1", "Deployment", "shop", "other"}, [4]string{"v1", "Secret", "shop", "settings"}),
	}
	deps := DependencyWorks(settings, works, "settings-configmap")
	if len(deps) != 3 {
		t.Fatalf("works carrying the ConfigMap: %+v", deps)
	}
	bindings := []workv1alpha1.ResourceBinding{
		{ObjectMeta: metav1.ObjectMeta{Name: "web-deployment"}, Spec: workv1alpha1.ResourceBindingSpec{
			Resource:              workv1alpha1.ObjectReference{Kind: "Deployment", Namespace: "shop", Name: "web"},
			Clusters:              []workv1alpha1.TargetCluster{{Name: "member1", Replicas: 2}},
			GracefulEvictionTasks: []workv1alpha1.GracefulEvictionTask{{FromCluster: "member3"}}}},
		// worker-statefulset is being deleted: named by its Work's label and manifest.
	}

	v := NewTemplateView(settings, nil, WorksOf(works, "settings-configmap-unclaimed"))
	AddRequirers(&v, deps, bindings)
	var b bytes.Buffer
	if err := WriteTemplate(&b, v); err != nil {
		t.Fatal(err)
	}
	want := `Template:   v1 ConfigMap shop/settings
Policy:     <none>
Binding:    <none> (no policy claimed the template; it is propagated as a dependency)
RequiredBy: web-deployment (Deployment shop/web), worker-statefulset (StatefulSet shop/worker)
Status:     <none>

CLUSTER   REPLICAS            WORK                         APPLIED   HEALTH    MESSAGE
member1   0                   web-deployment-member1       True      Healthy   <none>
member2   - (not scheduled)   worker-statefulset-member2   False     <none>    conflict
member3   0 (evicting)        web-deployment-member3       Unknown   <none>    <none>`
	if lines(b.String()) != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	if len(v.Works) != 3 || v.Works[1].Name != "worker-statefulset-member2" || v.Works[1].Applied != "False" {
		t.Errorf("works %+v", v.Works)
	}

	// Claimed as well: its own binding's rows stay alone, the requirers are named.
	own := &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Name: "settings-configmap"},
		Spec: workv1alpha1.ResourceBindingSpec{Resource: workv1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "settings"},
			Clusters: []workv1alpha1.TargetCluster{{Name: "member1"}}}}
	claimed := NewTemplateView(settings, own, WorksOf(works, "settings-configmap"))
	AddRequirers(&claimed, deps, bindings)
	if len(claimed.RequiredBy) != 2 || len(claimed.Clusters) != 1 || len(claimed.Works) != 1 || claimed.Works[0].Name != "settings-configmap-member1" {
		t.Errorf("claimed dependency: %+v", claimed)
	}
}
