package status

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
	"github.com/fedmesh/fedmesh/pkg/federation/rendering"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// appliedAt says a Work was applied at its generation gen, and at no other.
type appliedAt struct{ gen int64 }

func (appliedAt) Subscribe(func(types.NamespacedName)) {}
func (appliedAt) Forget(types.NamespacedName)          {}
func (v appliedAt) Current(metav1.Object, []metav1.Condition) *metav1.Condition {
	return &metav1.Condition{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionTrue, Reason: "Applied", Message: "applied", ObservedGeneration: v.gen}
}

// TestTemplateObservesANewGenerationOnlyOnceMembersHaveIt changes a template's pod template while its Work is
// suspended: the member still reports the settled old copy, so the template must not claim the new generation
// observed and rolled out (kubectl rollout status, helm --wait and Argo CD would report success at once).
func TestTemplateObservesANewGenerationOnlyOnceMembersHaveIt(t *testing.T) {
	f := fedtest.Start(t, fedtest.Options{Members: 1})
	ctx := context.Background()
	host := f.Host
	if err := host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	setReady(t, host, "member1", metav1.ConditionTrue)
	tpl := fedtest.Deployment(ns, "web", 2)
	if err := host.Create(ctx, tpl); err != nil {
		t.Fatal(err)
	}
	rb := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-deployment"},
		Spec: workv1alpha1.ResourceBindingSpec{
			Resource: workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: "web",
				UID: tpl.UID, ResourceVersion: tpl.ResourceVersion},
			Clusters: []workv1alpha1.TargetCluster{{Name: "member1", Replicas: 2}},
		},
	}
	if err := host.Create(ctx, rb); err != nil {
		t.Fatal(err)
	}
	w := work(t, rb.Name, "member1", fedtest.Deployment(ns, "web", 2))
	if err := host.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	chain := interpreter.Layers{Native: native.New()}.Chain()
	bindings := &BindingReconciler{Client: host, Templates: host, Aggregator: chain, Renderings: &rendering.Store{},
		Discovery: discovery.NewDiscoveryClientForConfigOrDie(f.Federation.Host.Config())}
	// The member's copy, applied from template generation 1, rolled out.
	settled := []workv1alpha1.ManifestStatus{{Identifier: workv1alpha1.ResourceIdentifier{Ordinal: 0, Group: "apps", Version: "v1",
		Kind: "Deployment", Resource: "deployments", Namespace: ns, Name: "web"},
		Status: raw(`{"replicas":2,"updatedReplicas":2,"readyReplicas":2,"availableReplicas":2,"observedGeneration":1,"generation":1,"resourceTemplateGeneration":1}`),
		Health: workv1alpha1.ResourceHealthy}}
	get := func(obj client.Object) {
		t.Helper()
		if err := host.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Fatal(err)
		}
	}
	get(w)
	if err := (&WorkReconciler{Client: host, Verdicts: appliedAt{gen: w.Generation}}).write(ctx, w, settled, nil); err != nil {
		t.Fatal(err)
	}
	reconcile := func() {
		t.Helper()
		if _, err := bindings.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(rb)}); err != nil {
			t.Fatal(err)
		}
	}
	observed := func() (gen, og, updated, replicas int64) {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("apps/v1")
		u.SetKind("Deployment")
		u.SetNamespace(ns)
		u.SetName("web")
		get(u)
		og, _, _ = unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		updated, _, _ = unstructured.NestedInt64(u.Object, "status", "updatedReplicas")
		replicas, _, _ = unstructured.NestedInt64(u.Object, "status", "replicas")
		return u.GetGeneration(), og, updated, replicas
	}
	reconcile()
	if gen, og, _, _ := observed(); og != gen {
		t.Fatalf("settled: template generation %d, observedGeneration %d", gen, og)
	}

	get(tpl)
	tpl.Spec.Template.Spec.Containers[0].Image = "registry.example/app:2"
	if err := host.Update(ctx, tpl); err != nil {
		t.Fatal(err)
	}
	get(rb)
	rb.Spec.Resource.ResourceVersion = tpl.ResourceVersion
	if err := host.Update(ctx, rb); err != nil {
		t.Fatal(err)
	}
	// The binding stage renders the new spec into the Work, which waits: dispatching is suspended.
	get(w)
	rendered := tpl.DeepCopy()
	rendered.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}
	rendered.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: "web", Labels: tpl.Labels}
	next := work(t, rb.Name, "member1", rendered)
	w.Spec.Workload = next.Spec.Workload
	w.Spec.SuspendDispatching = ptr.To(true)
	if err := host.Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	reconcile()
	gen, og, updated, replicas := observed()
	if og == gen && updated == replicas {
		t.Fatalf("the template says generation %d is observed with %d/%d replicas updated, but no member has it (Work not applied)", gen, updated, replicas)
	}
}
