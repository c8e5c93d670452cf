package detector

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/test/cluster"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

var (
	deploymentKind = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	configMapKind  = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
)

// TestDetector runs the detector against a real host API server, one step after the other.
func TestDetector(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	host, c := fedtest.Host(t)
	create := func(objs ...client.Object) {
		t.Helper()
		createAll(t, c, objs...)
	}
	create(namespace("a"), namespace("b"),
		webDeployment("a", "web", 6), webDeployment("b", "api", 2),
		&policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web"},
			Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: byName("web"), PropagateDeps: true}},
		&policyv1alpha1.ClusterPropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "all-deployments"},
			Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: byKind(), Priority: ptr.To[int32](10)}},
	)

	events := &fedtest.Events{}
	elector := &testElector{}
	r := startDetector(t, host, events, elector)

	t.Run("the namespaced policy claims its template and writes the binding", func(t *testing.T) {
		rb := waitBinding(t, c, "a", "web-deployment", func(rb *workv1alpha1.ResourceBinding) error {
			if rb.Spec.Replicas != 6 {
				return fmt.Errorf("replicas %d", rb.Spec.Replicas)
			}
			return nil
		})
		if cpu := rb.Spec.ReplicaRequirements.ResourceRequest.Cpu(); cpu.Cmp(resource.MustParse("250m")) != 0 {
			t.Errorf("cpu request %s, want 250m", cpu)
		}
		if rb.Spec.Resource.Name != "web" || rb.Spec.Resource.UID == "" || !rb.Spec.PropagateDeps ||
			rb.Labels[names.PropagationPolicyLabel] != "web" {
			t.Errorf("binding %+v %v", rb.Spec, rb.Labels)
		}
		waitLabels(t, c, "a", "web", map[string]string{names.PropagationPolicyLabel: "web"})
	})

	t.Run("the cluster policy claims the template of another namespace", func(t *testing.T) {
		waitLabels(t, c, "b", "api", map[string]string{names.ClusterPropagationPolicyLabel: "all-deployments"})
		waitBinding(t, c, "b", "api-deployment", func(rb *workv1alpha1.ResourceBinding) error {
			if rb.Spec.Replicas != 2 || rb.Labels[names.ClusterPropagationPolicyLabel] != "all-deployments" {
				return fmt.Errorf("replicas %d, labels %v", rb.Spec.Replicas, rb.Labels)
			}
			return nil
		})
	})

	t.Run("a binding deleted behind the detector's back is made again", func(t *testing.T) {
		old := waitBinding(t, c, "b", "api-deployment", func(*workv1alpha1.ResourceBinding) error { return nil })
		if err := c.Delete(ctx, old); err != nil {
			t.Fatal(err)
		}
		waitBinding(t, c, "b", "api-deployment", func(rb *workv1alpha1.ResourceBinding) error {
			if rb.UID == old.UID {
				return fmt.Errorf("still the old binding")
			}
			return nil
		})
	})

	t.Run("scaling the template updates the binding", func(t *testing.T) {
		patch := []byte(`{"spec":{"replicas":8}}`)
		if err := c.Patch(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web"}},
			client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatal(err)
		}
		waitBinding(t, c, "a", "web-deployment", func(rb *workv1alpha1.ResourceBinding) error {
			if rb.Spec.Replicas != 8 {
				return fmt.Errorf("replicas %d", rb.Spec.Replicas)
			}
			return nil
		})
	})

	t.Run("a restart after status writes leaves the bindings as they are", func(t *testing.T) {
		before := waitBinding(t, c, "a", "web-deployment", func(*workv1alpha1.ResourceBinding) error { return nil })
		// The status stage writes templates' status all the time; each write is a new resourceVersion.
		status := []byte(`{"status":{"replicas":8,"readyReplicas":8}}`)
		if err := c.Status().Patch(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web"}},
			client.RawPatch(types.MergePatchType, status)); err != nil {
			t.Fatal(err)
		}
		// A second detector takes up every template, as a restarted one would.
		restarted := &Reconciler{Interpreter: interpreter.Layers{Native: native.New()}.Chain(), Recorder: events, ReleaseGrace: testReleaseGrace}
		fedtest.StartManager(t, host.Config(), restarted.SetupWithManager)
		eventually(t, func() error {
			if kinds := restarted.WatchedKinds(); !slices.Contains(kinds, deploymentKind) {
				return fmt.Errorf("the second detector watches %v", kinds)
			}
			return nil
		})
		time.Sleep(2 * time.Second)
		after := waitBinding(t, c, "a", "web-deployment", func(*workv1alpha1.ResourceBinding) error { return nil })
		if after.ResourceVersion != before.ResourceVersion {
			t.Errorf("the binding was rewritten after a status write: spec.resource.resourceVersion %s -> %s",
				before.Spec.Resource.ResourceVersion, after.Spec.Resource.ResourceVersion)
		}
	})

	t.Run("a kind selected later gets an informer and bindings without replicas", func(t *testing.T) {
		if slices.Contains(r.WatchedKinds(), configMapKind) {
			t.Fatal("ConfigMaps watched before any policy selects them")
		}
		create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "settings"}, Data: map[string]string{"k": "v"}},
			&policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "settings"},
				Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: []policyv1alpha1.ResourceSelector{
					{APIVersion: "v1", Kind: "ConfigMap", Name: "settings"}}}})
		rb := waitBinding(t, c, "a", "settings-configmap", func(*workv1alpha1.ResourceBinding) error { return nil })
		if rb.Spec.Replicas != 0 || rb.Spec.ReplicaRequirements != nil {
			t.Errorf("replicas %d, requirements %+v", rb.Spec.Replicas, rb.Spec.ReplicaRequirements)
		}
		if kinds := r.WatchedKinds(); !slices.Contains(kinds, configMapKind) || !slices.Contains(kinds, deploymentKind) {
			t.Errorf("watched kinds %v", kinds)
		}
	})

	t.Run("deleting the policy releases the template, deletes its binding and stops the informer", func(t *testing.T) {
		// A finalizer of the test's holds the binding, to see it told to keep the members' copies.
		const hold = "test.fedmesh.io/hold"
		key := client.ObjectKey{Namespace: "a", Name: "settings-configmap"}
		rb := &workv1alpha1.ResourceBinding{}
		if err := c.Get(ctx, key, rb); err != nil {
			t.Fatal(err)
		}
		rb.Finalizers = append(rb.Finalizers, hold)
		if err := c.Update(ctx, rb); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "settings"}}); err != nil {
			t.Fatal(err)
		}
		waitLabels(t, c, "a", "settings", nil)
		eventually(t, func() error {
			if err := c.Get(ctx, key, rb); err != nil {
				return err
			}
			if rb.DeletionTimestamp == nil {
				return fmt.Errorf("binding not deleted")
			}
			return nil
		})
		if p := rb.Spec.PreserveResourcesOnDeletion; p == nil || !*p {
			t.Errorf("a binding deleted because its policy went does not preserve the members' copies")
		}
		eventually(t, func() error {
			if err := c.Get(ctx, key, rb); err != nil {
				return err
			}
			rb.Finalizers = slices.DeleteFunc(rb.Finalizers, func(f string) bool { return f == hold })
			return c.Update(ctx, rb)
		})
		waitGone(t, c, key, &workv1alpha1.ResourceBinding{})
		eventually(t, func() error {
			if kinds := r.WatchedKinds(); slices.Contains(kinds, configMapKind) || !slices.Contains(kinds, deploymentKind) {
				return fmt.Errorf("watched kinds %v", kinds)
			}
			return nil
		})
	})

	t.Run("a template whose policy goes is claimed by the next one", func(t *testing.T) {
		if err := c.Delete(ctx, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web"}}); err != nil {
			t.Fatal(err)
		}
		waitLabels(t, c, "a", "web", map[string]string{names.ClusterPropagationPolicyLabel: "all-deployments"})
		waitBinding(t, c, "a", "web-deployment", func(rb *workv1alpha1.ResourceBinding) error {
			if rb.Labels[names.ClusterPropagationPolicyLabel] != "all-deployments" || rb.Labels[names.PropagationPolicyLabel] != "" {
				return fmt.Errorf("labels %v", rb.Labels)
			}
			if rb.Spec.PropagateDeps || rb.Spec.Replicas != 8 {
				return fmt.Errorf("spec %+v", rb.Spec)
			}
			return nil
		})
	})

	t.Run("deleting the template deletes its binding", func(t *testing.T) {
		if err := c.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web"}}); err != nil {
			t.Fatal(err)
		}
		waitGone(t, c, client.ObjectKey{Namespace: "a", Name: "web-deployment"}, &workv1alpha1.ResourceBinding{})
	})

	t.Run("a binding that appears after the start, its template gone, is deleted as with the template's deletion", func(t *testing.T) {
		// As to a shard given namespace b, whose template was deleted while b moved: the binding arrives as a
		// create, and no event of the template's ever will. A finalizer of the test's holds the binding, to see
		// it told to take the members' copies with it (not to keep them, as a release would).
		const hold = "test.fedmesh.io/hold"
		// The detector's informers have listed: the orphan is no binding of their initial list.
		waitBinding(t, c, "b", "api-deployment", func(*workv1alpha1.ResourceBinding) error { return nil })
		orphan := &workv1alpha1.ResourceBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "moved-deployment",
				Labels:     map[string]string{names.ClusterPropagationPolicyLabel: "all-deployments"},
				Finalizers: []string{names.BindingFinalizer, hold}},
			Spec: workv1alpha1.ResourceBindingSpec{Resource: workv1alpha1.ObjectReference{
				APIVersion: "apps/v1", Kind: "Deployment", Namespace: "b", Name: "moved", UID: "gone"}}}
		create(orphan)
		key := client.ObjectKeyFromObject(orphan)
		rb := &workv1alpha1.ResourceBinding{}
		eventually(t, func() error {
			if err := c.Get(ctx, key, rb); err != nil {
				return err
			}
			if rb.DeletionTimestamp == nil {
				return fmt.Errorf("binding of the deleted template not deleted")
			}
			return nil
		})
		if p := rb.Spec.PreserveResourcesOnDeletion; p != nil && *p {
			t.Errorf("the binding of a deleted template was told to keep the members' copies")
		}
		eventually(t, func() error {
			if err := c.Get(ctx, key, rb); err != nil {
				return err
			}
			rb.Finalizers = slices.DeleteFunc(rb.Finalizers, func(f string) bool { return f == hold })
			return c.Update(ctx, rb)
		})
		waitGone(t, c, key, &workv1alpha1.ResourceBinding{})
	})

	t.Run("a cluster-scoped template is handled once elected, its binding in the system namespace", func(t *testing.T) {
		create(namespace(names.SystemNamespace), &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "viewer"}},
			&policyv1alpha1.ClusterPropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "roles"},
				Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: []policyv1alpha1.ResourceSelector{
					{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "viewer"}}}})
		key := client.ObjectKey{Namespace: names.SystemNamespace, Name: "viewer-clusterrole"}
		// Not elected: another federator handles it. Namespaced templates go on meanwhile.
		create(webDeployment("b", "while-unelected", 1))
		waitBinding(t, c, "b", "while-unelected-deployment", func(*workv1alpha1.ResourceBinding) error { return nil })
		if err := c.Get(ctx, key, &workv1alpha1.ResourceBinding{}); !apierrors.IsNotFound(err) {
			t.Fatalf("binding of a cluster-scoped template made unelected: %v", err)
		}
		if role := getRole(t, c, "viewer"); role.Labels[names.ClusterPropagationPolicyLabel] != "" {
			t.Fatalf("claimed unelected: %v", role.Labels)
		}
		elector.elect()
		rb := waitBinding(t, c, key.Namespace, key.Name, func(*workv1alpha1.ResourceBinding) error { return nil })
		if ref := rb.Spec.Resource; ref.Kind != "ClusterRole" || ref.Namespace != "" || ref.Name != "viewer" {
			t.Errorf("binding names %+v, want ClusterRole viewer", ref)
		}
		if role := getRole(t, c, "viewer"); role.Labels[names.ClusterPropagationPolicyLabel] != "roles" {
			t.Errorf("claim labels %v", role.Labels)
		}
		if err := c.Delete(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "viewer"}}); err != nil {
			t.Fatal(err)
		}
		waitGone(t, c, key, &workv1alpha1.ResourceBinding{})
		// A binding that appears in the system namespace (as to a shard just given it) whose template is gone,
		// deleted while another shard handled cluster-scoped templates: it goes too.
		ghost := &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: names.SystemNamespace, Name: "ghost-clusterrole"},
			Spec: workv1alpha1.ResourceBindingSpec{Resource: workv1alpha1.ObjectReference{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "ghost"}}}
		create(ghost)
		waitGone(t, c, client.ObjectKeyFromObject(ghost), &workv1alpha1.ResourceBinding{})
	})

	t.Run("a lazy policy's change waits for the template's next change", func(t *testing.T) {
		placement := func(cluster string) policyv1alpha1.Placement {
			return policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{cluster}}}
		}
		onCluster := func(cluster string) func(*workv1alpha1.ResourceBinding) error {
			return func(rb *workv1alpha1.ResourceBinding) error {
				if p := rb.Spec.Placement; p == nil || p.ClusterAffinity == nil || p.ClusterAffinity.ClusterNames[0] != cluster {
					return fmt.Errorf("placement %+v, want cluster %s", p, cluster)
				}
				return nil
			}
		}
		policy := &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "lazy"},
			Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: byName("lazy"), Placement: placement("m1"),
				ActivationPreference: policyv1alpha1.LazyActivation}}
		create(policy, webDeployment("b", "lazy", 1))
		waitBinding(t, c, "b", "lazy-deployment", onCluster("m1"))
		policy.Spec.Placement = placement("m2")
		if err := c.Update(ctx, policy); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // time enough for an eager detector to move the binding
		waitBinding(t, c, "b", "lazy-deployment", onCluster("m1"))
		if err := c.Patch(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "lazy"}},
			client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":2}}`))); err != nil {
			t.Fatal(err)
		}
		waitBinding(t, c, "b", "lazy-deployment", onCluster("m2"))
	})

	t.Run("a policy selecting an unknown kind gets an event", func(t *testing.T) {
		create(&policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "widgets"},
			Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: []policyv1alpha1.ResourceSelector{
				{APIVersion: "example.com/v1", Kind: "Widget"}}}})
		waitEvent(t, events, "", ReasonUnknownKind, "example.com/v1 Widget")
		// The detector still works.
		create(webDeployment("b", "late", 1))
		waitBinding(t, c, "b", "late-deployment", func(*workv1alpha1.ResourceBinding) error { return nil })
	})

	t.Run("a policy's PriorityClass gives its bindings their schedule priority", func(t *testing.T) {
		testSchedulePriority(t, c, events)
	})

	t.Run("a policy waits for the overrides it depends on", func(t *testing.T) {
		testDependentOverrides(t, c, events)
	})

	t.Run("a policy whose name is longer than a label value claims its template", func(t *testing.T) {
		long := "checkout-frontend-canary-propagation-to-every-production-member-cluster" // 72 characters
		create(namespace("c"), webDeployment("c", "checkout", 1),
			&policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "c", Name: long},
				Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: byName("checkout"), Preemption: policyv1alpha1.PreemptAlways}})
		claim := map[string]string{names.PropagationPolicyLabel: names.LabelValue(long)}
		waitLabels(t, c, "c", "checkout", claim)
		waitBinding(t, c, "c", "checkout-deployment", func(rb *workv1alpha1.ResourceBinding) error {
			if rb.Labels[names.PropagationPolicyLabel] != claim[names.PropagationPolicyLabel] {
				return fmt.Errorf("labels %v", rb.Labels)
			}
			return nil
		})
	})

	t.Run("a kind selected in two versions is one template per object, propagated in its policy's version", func(t *testing.T) {
		hpa := func(name string) *autoscalingv2.HorizontalPodAutoscaler {
			return &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: "v", Name: name},
				Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 3, ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{
					APIVersion: "apps/v1", Kind: "Deployment", Name: name}}}
		}
		selecting := func(apiVersion, name string) []policyv1alpha1.ResourceSelector {
			return []policyv1alpha1.ResourceSelector{{APIVersion: apiVersion, Kind: "HorizontalPodAutoscaler", Name: name}}
		}
		// Each policy names a version of its own; neither selects the other's template.
		create(namespace("v"), hpa("scaler"), hpa("legacy"),
			&policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "v", Name: "scalers"},
				Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: selecting("autoscaling/v2", "scaler")}},
			&policyv1alpha1.ClusterPropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "legacy-scalers"},
				Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: selecting("autoscaling/v1", "legacy")}})
		claimedIn := func(label, policy, apiVersion string) func(*workv1alpha1.ResourceBinding) error {
			return func(rb *workv1alpha1.ResourceBinding) error {
				if rb.Labels[label] != policy || rb.Spec.Resource.APIVersion != apiVersion {
					return fmt.Errorf("labels %v, template %s", rb.Labels, rb.Spec.Resource.APIVersion)
				}
				return nil
			}
		}
		scaler := waitBinding(t, c, "v", "scaler-horizontalpodautoscaler", claimedIn(names.PropagationPolicyLabel, "scalers", "autoscaling/v2"))
		waitBinding(t, c, "v", "legacy-horizontalpodautoscaler", claimedIn(names.ClusterPropagationPolicyLabel, "legacy-scalers", "autoscaling/v1"))
		var hpas []schema.GroupVersionKind
		for _, k := range r.WatchedKinds() {
			if k.Kind == "HorizontalPodAutoscaler" {
				hpas = append(hpas, k)
			}
		}
		if len(hpas) != 1 {
			t.Errorf("HorizontalPodAutoscalers watched as %v, want one version", hpas)
		}
		// Seen in the other version too, the template was released by that view and claimed by this one, in turn.
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			rb := &workv1alpha1.ResourceBinding{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(scaler), rb); err != nil || rb.UID != scaler.UID || rb.DeletionTimestamp != nil {
				t.Fatalf("the binding of HPA v/scaler was deleted (%v, uid %s -> %s)", err, scaler.UID, rb.UID)
			}
			var got autoscalingv2.HorizontalPodAutoscaler
			if err := c.Get(ctx, client.ObjectKey{Namespace: "v", Name: "scaler"}, &got); err != nil {
				t.Fatal(err)
			}
			if got.Labels[names.PropagationPolicyLabel] != "scalers" {
				t.Fatalf("HPA v/scaler released: claim labels %v", got.Labels)
			}
		}
	})

	// Last: the APIService left behind fails the discovery of its group from then on.
	t.Run("a policy selecting a kind of an aggregated API that is down holds back no other policy", func(t *testing.T) {
		testAggregatedAPIDown(t, c, events)
	})
}

// testReleaseGrace is short: the tests wait for releases (TestReleaseGrace tests the grace).
const testReleaseGrace = 500 * time.Millisecond

// startDetector runs a detector; with elector nil, it handles cluster-scoped templates unelected.
func startDetector(t *testing.T, host *cluster.Cluster, events *fedtest.Events, elector *testElector) *Reconciler {
	t.Helper()
	r := &Reconciler{
		Interpreter:      interpreter.Layers{Native: native.New()}.Chain(),
		Recorder:         events,
		UnknownKindRetry: time.Second,
		ReleaseGrace:     testReleaseGrace,
	}
	if elector != nil {
		r.ClusterScoped = elector
	}
	fedtest.StartManager(t, host.Config(), r.SetupWithManager)
	fedtest.StartManager(t, host.Config(), fedtest.ReleaseFinalizer(&workv1alpha1.ResourceBinding{}, names.BindingFinalizer))
	return r
}

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func webDeployment(ns, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: "nginx",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("250m")}},
				}}},
			},
		},
	}
}

// createAll creates objs in order.
func createAll(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
}

// waitEvent waits for an event of reason about the object called name ("" for any) saying text.
func waitEvent(t *testing.T, events *fedtest.Events, name, reason, text string) {
	t.Helper()
	eventually(t, func() error {
		if events.Find(name, reason, text) == "" {
			return fmt.Errorf("no %s event saying %q among %v", reason, text, events.All())
		}
		return nil
	})
}

func eventually(t *testing.T, check func() error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func waitBinding(t *testing.T, c client.Client, ns, name string, check func(*workv1alpha1.ResourceBinding) error) *workv1alpha1.ResourceBinding {
	t.Helper()
	rb := &workv1alpha1.ResourceBinding{}
	eventually(t, func() error {
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, rb); err != nil {
			return err
		}
		return check(rb)
	})
	return rb
}

func waitGone(t *testing.T, c client.Client, key client.ObjectKey, obj client.Object) {
	t.Helper()
	eventually(t, func() error {
		err := c.Get(context.Background(), key, obj)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("%s still there (%v)", key, err)
	})
}

// waitLabels waits until the template ns/name (a Deployment or ConfigMap) carries exactly the claim labels want.
func waitLabels(t *testing.T, c client.Client, ns, name string, want map[string]string) {
	t.Helper()
	eventually(t, func() error {
		obj := &metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(deploymentKind)
		if name == "settings" {
			obj.SetGroupVersionKind(configMapKind)
		}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
			return err
		}
		got := map[string]string{}
		for _, k := range []string{names.PropagationPolicyLabel, names.ClusterPropagationPolicyLabel} {
			if v, ok := obj.Labels[k]; ok {
				got[k] = v
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) && !(len(got) == 0 && len(want) == 0) {
			return fmt.Errorf("claim labels %v, want %v", got, want)
		}
		return nil
	})
}

func getRole(t *testing.T, c client.Client, name string) *rbacv1.ClusterRole {
	t.Helper()
	var role rbacv1.ClusterRole
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &role); err != nil {
		t.Fatal(err)
	}
	return &role
}

// testElector is an election the test decides: not elected until elect.
type testElector struct {
	mu        sync.Mutex
	elected   bool
	onElected []func()
}

func (e *testElector) Elected() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.elected
}

func (e *testElector) OnElected(fn func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.onElected = append(e.onElected, fn)
}

func (e *testElector) elect() {
	e.mu.Lock()
	e.elected = true
	fns := e.onElected
	e.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}
