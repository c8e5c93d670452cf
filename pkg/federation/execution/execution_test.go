package execution

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
	"github.com/fedmesh/fedmesh/pkg/federation/member"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/status"
	"github.com/fedmesh/fedmesh/pkg/federation/verdicts"
	"github.com/fedmesh/fedmesh/pkg/federation/workrecord"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

const ns = "shop"

// TestExecution runs the controller against a real host and a member with workloads: applying, keeping what the
// member owns, dropping a removed manifest, conflicts under Abort and Overwrite (taking over without new pods),
// deletion with and without preserveResourcesOnDeletion, and an unreachable member.
func TestExecution(t *testing.T) {
	f := fedtest.Start(t, fedtest.Options{Members: 1, Workloads: true})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	host := f.Host
	mem := f.Members[0].Clientset()
	cluster := f.Members[0].Name()
	for _, c := range []client.Client{host} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := mem.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The work-status stage runs too: it writes the Applied condition this stage decides.
	fedtest.StartManager(t, f.Federation.Host.Config(), func(mgr ctrl.Manager) error {
		chain := interpreter.Layers{Native: native.New()}.Chain()
		members := &member.Factory{Host: mgr.GetAPIReader()}
		applied := &verdicts.Store{Type: workv1alpha1.WorkApplied}
		r := &Reconciler{
			Client:          mgr.GetClient(),
			Members:         members,
			Retainer:        chain,
			Verdicts:        applied,
			Recorder:        fedtest.Recorder(t, mgr, "fedmesh-execution-test"),
			Timeout:         5 * time.Second,
			ConflictRecheck: 2 * time.Second,
		}
		if err := r.SetupWithManager(mgr); err != nil {
			return err
		}
		works := &status.WorkReconciler{Client: mgr.GetClient(), Members: members, Verdicts: applied, Interpreter: chain, SyncPoll: 200 * time.Millisecond}
		return works.SetupWithManager(mgr)
	})

	t.Run("apply, retain, remove a manifest, delete", func(t *testing.T) {
		web := fedtest.Deployment(ns, "web", 2)
		web.Labels[interpreter.RetainReplicasLabel] = "true"
		cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "web-config"}, Data: map[string]string{"a": "1"}}
		w := work("web-deployment-"+cluster, cluster, "", web, cm)
		if err := host.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		waitApplied(t, host, w, metav1.ConditionTrue, ReasonApplied)
		var applied workv1alpha1.Work
		if err := host.Get(ctx, client.ObjectKeyFromObject(w), &applied); err != nil {
			t.Fatal(err)
		}
		if record, ok := applied.Annotations[workrecord.Annotation]; ok {
			t.Errorf("a Work whose manifests never changed got a record: %s", record)
		}

		d, err := mem.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if d.Labels[names.ManagedLabel] != "true" || d.Labels[names.WorkNameLabel] != w.Name || d.Labels[names.WorkNamespaceLabel] != ns {
			t.Errorf("identity labels missing: %v", d.Labels)
		}
		if _, ok := d.Spec.Template.Labels[names.ManagedLabel]; ok {
			t.Errorf("identity label put on the pod template: %v", d.Spec.Template.Labels)
		}
		if _, err := mem.CoreV1().ConfigMaps(ns).Get(ctx, "web-config", metav1.GetOptions{}); err != nil {
			t.Errorf("config map in the Work's namespace: %v", err)
		}

		// The member scales it (as its HPA would) and labels it; then the federation changes the template. (The
		// member's controllers write the Deployment too: update the latest.)
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			d, err := mem.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			d.Labels["member.example/team"] = "blue"
			d.Spec.Replicas = ptr.To[int32](5)
			_, err = mem.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{FieldManager: "member-hpa"})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		web.Annotations = map[string]string{"rev": "2"}
		updateManifests(t, host, w, web) // the ConfigMap is dropped too
		fedtest.Eventually(t, 20*time.Second, "re-applied, member fields kept, config map deleted", func() error {
			d, err := mem.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if d.Annotations["rev"] != "2" {
				return fmt.Errorf("not re-applied: annotations %v", d.Annotations)
			}
			if d.Labels["member.example/team"] != "blue" || *d.Spec.Replicas != 5 {
				return fmt.Errorf("member fields lost: labels %v replicas %d", d.Labels, *d.Spec.Replicas)
			}
			if _, err := mem.CoreV1().ConfigMaps(ns).Get(ctx, "web-config", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("removed manifest's config map still there: %v", err)
			}
			var cur workv1alpha1.Work
			if err := host.Get(ctx, client.ObjectKeyFromObject(w), &cur); err != nil {
				return err
			}
			if record, ok := cur.Annotations[workrecord.Annotation]; ok {
				return fmt.Errorf("the removed config map is still on the record: %s", record)
			}
			return nil
		})

		if err := host.Delete(ctx, w); err != nil {
			t.Fatal(err)
		}
		fedtest.Eventually(t, 20*time.Second, "member object and Work deleted", func() error {
			if _, err := mem.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("deployment still there: %v", err)
			}
			if err := host.Get(ctx, client.ObjectKeyFromObject(w), &workv1alpha1.Work{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("work still there: %v", err)
			}
			return nil
		})
	})

	t.Run("a manifest moved to another version of its group keeps its object", func(t *testing.T) {
		// As when a CRD's template moves from v1alpha1 to v1beta1: the member object is the one the old version
		// named, and is applied, not deleted as a manifest the Work dropped.
		hpa := func(apiVersion string, maxReplicas int64) *unstructured.Unstructured {
			return &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": "HorizontalPodAutoscaler",
				"metadata": map[string]any{"name": "api"},
				"spec": map[string]any{"maxReplicas": maxReplicas,
					"scaleTargetRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"}}}}
		}
		w := work("api-hpa-"+cluster, cluster, "", hpa("autoscaling/v1", 5))
		if err := host.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		waitApplied(t, host, w, metav1.ConditionTrue, ReasonApplied)
		before, err := mem.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "api", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		updateManifests(t, host, w, hpa("autoscaling/v2", 6))
		waitApplied(t, host, w, metav1.ConditionTrue, ReasonApplied)
		after, err := mem.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "api", metav1.GetOptions{})
		switch {
		case err != nil:
			t.Fatalf("the HPA after its manifest moved to autoscaling/v2: %v", err)
		case after.UID != before.UID:
			t.Errorf("the HPA was deleted and made again: uid %s -> %s", before.UID, after.UID)
		case after.Spec.MaxReplicas != 6:
			t.Errorf("maxReplicas %d, want 6", after.Spec.MaxReplicas)
		}
		if err := host.Delete(ctx, w); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("an object deleted in the member is applied again", func(t *testing.T) {
		cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"a": "1"}}
		w := work("settings-configmap-"+cluster, cluster, "", cm)
		if err := host.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		waitApplied(t, host, w, metav1.ConditionTrue, ReasonApplied)
		fedtest.Eventually(t, 20*time.Second, "the config map reported to the Work", func() error {
			var cur workv1alpha1.Work
			if err := host.Get(ctx, client.ObjectKeyFromObject(w), &cur); err != nil {
				return err
			}
			if len(cur.Status.ManifestStatuses) != 1 {
				return fmt.Errorf("manifestStatuses %+v", cur.Status.ManifestStatuses)
			}
			return nil
		})
		before, err := mem.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := mem.CoreV1().ConfigMaps(ns).Delete(ctx, "settings", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		fedtest.Eventually(t, 20*time.Second, "the config map applied again", func() error {
			after, err := mem.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{})
			switch {
			case err != nil:
				return err
			case after.UID == before.UID:
				return fmt.Errorf("not deleted yet")
			case after.Data["a"] != "1":
				return fmt.Errorf("data %v", after.Data)
			}
			return nil
		})
		waitApplied(t, host, w, metav1.ConditionTrue, ReasonApplied)
		if err := host.Delete(ctx, w); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a Work of a kind the member does not serve goes when deleted", func(t *testing.T) {
		widget := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "w1"}, "spec": map[string]any{"size": int64(1)}}}
		w := work("w1-widget-"+cluster, cluster, "", widget)
		if err := host.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		waitApplied(t, host, w, metav1.ConditionFalse, ReasonUnknownKind)
		if err := host.Delete(ctx, w); err != nil {
			t.Fatal(err)
		}
		fedtest.Eventually(t, 20*time.Second, "Work gone", func() error {
			var cur workv1alpha1.Work
			if err := host.Get(ctx, client.ObjectKeyFromObject(w), &cur); !apierrors.IsNotFound(err) {
				return fmt.Errorf("work still there, finalizers %v: %v", cur.Finalizers, err)
			}
			return nil
		})
	})

	t.Run("conflict: abort, then overwrite without new pods, then delete preserving", func(t *testing.T) {
		legacy := fedtest.Deployment(ns, "legacy", 2)
		if _, err := mem.AppsV1().Deployments(ns).Create(ctx, legacy.DeepCopy(), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var before []string
		fedtest.Eventually(t, 40*time.Second, "legacy pods running", func() (err error) {
			before, err = podUIDs(ctx, mem, "legacy", true)
			return err
		})
		genBefore := deploymentGeneration(t, mem, "legacy")

		rb := &workv1alpha1.ResourceBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "legacy-deployment"},
			Spec: workv1alpha1.ResourceBindingSpec{
				Resource: workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: "legacy"},
			},
		}
		if err := host.Create(ctx, rb); err != nil {
			t.Fatal(err)
		}
		w := work("legacy-deployment-"+cluster, cluster, rb.Name, legacy)
		w.Spec.PreserveResourcesOnDeletion = ptr.To(true)
		if err := host.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		cond := waitApplied(t, host, w, metav1.ConditionFalse, ReasonConflictAbort)
		for _, want := range []string{"Deployment shop/legacy", "not created by fedmesh", "Overwrite"} {
			if !strings.Contains(cond.Message, want) {
				t.Errorf("Applied message %q does not say %q", cond.Message, want)
			}
		}
		if d, _ := mem.AppsV1().Deployments(ns).Get(ctx, "legacy", metav1.GetOptions{}); d.Labels[names.ManagedLabel] != "" {
			t.Errorf("aborted object was touched: %v", d.Labels)
		}

		patch := client.MergeFrom(rb.DeepCopy())
		rb.Spec.ConflictResolution = policyv1alpha1.ConflictOverwrite
		if err := host.Patch(ctx, rb, patch); err != nil {
			t.Fatal(err)
		}
		waitApplied(t, host, w, metav1.ConditionTrue, ReasonApplied)
		d, err := mem.AppsV1().Deployments(ns).Get(ctx, "legacy", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if d.Labels[names.WorkNameLabel] != w.Name {
			t.Errorf("not taken over: labels %v", d.Labels)
		}
		if d.Generation != genBefore {
			t.Errorf("takeover changed the spec: generation %d -> %d", genBefore, d.Generation)
		}
		time.Sleep(2 * time.Second) // a rollout, had there been one, would have started replacing pods by now
		after, err := podUIDs(ctx, mem, "legacy", false)
		if err != nil || fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("pods changed by the takeover: %v -> %v (%v)", before, after, err)
		}

		if err := host.Delete(ctx, w); err != nil {
			t.Fatal(err)
		}
		fedtest.Eventually(t, 20*time.Second, "Work gone, object preserved and released", func() error {
			if err := host.Get(ctx, client.ObjectKeyFromObject(w), &workv1alpha1.Work{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("work still there: %v", err)
			}
			d, err := mem.AppsV1().Deployments(ns).Get(ctx, "legacy", metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("preserved deployment: %w", err)
			}
			if d.Labels[names.ManagedLabel] != "" || d.Labels[names.WorkNameLabel] != "" {
				return fmt.Errorf("identity labels left on a released object: %v", d.Labels)
			}
			for _, mf := range d.ManagedFields {
				if mf.Manager == names.FieldManager {
					return fmt.Errorf("fedmesh still owns fields of a released object")
				}
			}
			return nil
		})
	})

	t.Run("a preserved object loses fedmesh's marks, not the member's", func(t *testing.T) {
		// As rendered: the template's policy claim and the generation stamp ride on the manifest.
		kept := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "kept",
				Labels:      map[string]string{"app": "kept", names.PropagationPolicyLabel: "kept-policy"},
				Annotations: map[string]string{"team": "blue", interpreter.TemplateGenerationAnnotation: "4"}},
			Data: map[string]string{"a": "1"}}
		w := work("kept-configmap-"+cluster, cluster, "", kept)
		w.Spec.PreserveResourcesOnDeletion = ptr.To(true)
		if err := host.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		waitApplied(t, host, w, metav1.ConditionTrue, ReasonApplied)
		// The member puts a label of fedmesh's key on it itself.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cm, err := mem.CoreV1().ConfigMaps(ns).Get(ctx, "kept", metav1.GetOptions{})
			if err != nil {
				return err
			}
			cm.Labels[names.ClusterPropagationPolicyLabel] = "member-own"
			_, err = mem.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{FieldManager: "member-admin"})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}

		if err := host.Delete(ctx, w); err != nil {
			t.Fatal(err)
		}
		fedtest.Eventually(t, 20*time.Second, "Work gone, object preserved without fedmesh's marks", func() error {
			if err := host.Get(ctx, client.ObjectKeyFromObject(w), &workv1alpha1.Work{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("work still there: %v", err)
			}
			cm, err := mem.CoreV1().ConfigMaps(ns).Get(ctx, "kept", metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("preserved config map: %w", err)
			}
			for _, k := range []string{names.ManagedLabel, names.WorkNameLabel, names.PropagationPolicyLabel} {
				if v, ok := cm.Labels[k]; ok {
					return fmt.Errorf("label %s=%s left on a released object: %v", k, v, cm.Labels)
				}
			}
			if v, ok := cm.Annotations[interpreter.TemplateGenerationAnnotation]; ok {
				return fmt.Errorf("annotation %s=%s left on a released object", interpreter.TemplateGenerationAnnotation, v)
			}
			if cm.Labels["app"] != "kept" || cm.Annotations["team"] != "blue" {
				return fmt.Errorf("the template's own metadata was removed: labels %v, annotations %v", cm.Labels, cm.Annotations)
			}
			if cm.Labels[names.ClusterPropagationPolicyLabel] != "member-own" {
				return fmt.Errorf("the member's label was removed: %v", cm.Labels)
			}
			return nil
		})
	})

	t.Run("a dependency shared by another Work is kept", func(t *testing.T) {
		shared := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "shared"}, Data: map[string]string{"a": "1"}}
		a := work("a-"+cluster, cluster, "", shared)
		b := work("b-"+strings.Repeat("shared-", 10)+cluster, cluster, "", shared) // too long for a label
		from := func(cm *corev1.ConfigMap) string {
			w, _ := names.AppliedFrom(cm)
			return w.Name
		}
		for _, w := range []*workv1alpha1.Work{a, b} {
			if err := host.Create(ctx, w); err != nil {
				t.Fatal(err)
			}
			waitApplied(t, host, w, metav1.ConditionTrue, ReasonApplied)
		}
		// Whichever applied last holds the labels; deleting that one must hand the object to the other.
		cm, err := mem.CoreV1().ConfigMaps(ns).Get(ctx, "shared", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		holder, other := a, b
		if from(cm) == b.Name {
			holder, other = b, a
		} else if from(cm) != a.Name {
			t.Fatalf("shared object held by neither Work: labels %v annotations %v", cm.Labels, cm.Annotations)
		}
		if err := host.Delete(ctx, holder); err != nil {
			t.Fatal(err)
		}
		fedtest.Eventually(t, 20*time.Second, "deleted Work gone, shared object kept for the other", func() error {
			if err := host.Get(ctx, client.ObjectKeyFromObject(holder), &workv1alpha1.Work{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("work still there: %v", err)
			}
			cm, err := mem.CoreV1().ConfigMaps(ns).Get(ctx, "shared", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if from(cm) != other.Name || cm.Labels[names.WorkNameLabel] != names.LabelValue(other.Name) {
				return fmt.Errorf("labels %v annotations %v, want it handed to %s", cm.Labels, cm.Annotations, other.Name)
			}
			return nil
		})
		if err := host.Delete(ctx, other); err != nil {
			t.Fatal(err)
		}
		fedtest.Eventually(t, 20*time.Second, "last Work deleted, shared object deleted", func() error {
			if _, err := mem.CoreV1().ConfigMaps(ns).Get(ctx, "shared", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("config map still there: %v", err)
			}
			return nil
		})
	})

	t.Run("a Work whose name is too long for a label is applied, reported and deleted", func(t *testing.T) {
		w := work("checkout-frontend-canary-v2-deployment-member-eu-west-1-production", cluster, "", fedtest.Deployment(ns, "checkout", 2))
		if err := host.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		waitApplied(t, host, w, metav1.ConditionTrue, ReasonApplied)
		d, err := mem.AppsV1().Deployments(ns).Get(ctx, "checkout", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if from, _ := names.AppliedFrom(d); from != client.ObjectKeyFromObject(w) {
			t.Errorf("member object names Work %v: labels %v annotations %v", from, d.Labels, d.Annotations)
		}
		// Its pods become ready after the apply: only the member object's change tells the status stage, which
		// must find the Work from the object.
		fedtest.Eventually(t, 60*time.Second, "member status reported to the Work", func() error {
			var cur workv1alpha1.Work
			if err := host.Get(ctx, client.ObjectKeyFromObject(w), &cur); err != nil {
				return err
			}
			if len(cur.Status.ManifestStatuses) != 1 {
				return fmt.Errorf("manifestStatuses %+v", cur.Status.ManifestStatuses)
			}
			ms := cur.Status.ManifestStatuses[0]
			var st struct {
				ReadyReplicas int `json:"readyReplicas"`
			}
			if ms.Status != nil {
				_ = json.Unmarshal(ms.Status.Raw, &st)
			}
			if st.ReadyReplicas != 2 || ms.Health != workv1alpha1.ResourceHealthy {
				return fmt.Errorf("readyReplicas %d health %s", st.ReadyReplicas, ms.Health)
			}
			return nil
		})
		if err := host.Delete(ctx, w); err != nil {
			t.Fatal(err)
		}
		fedtest.Eventually(t, 20*time.Second, "member object and Work deleted", func() error {
			if _, err := mem.AppsV1().Deployments(ns).Get(ctx, "checkout", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("deployment still there: %v", err)
			}
			if err := host.Get(ctx, client.ObjectKeyFromObject(w), &workv1alpha1.Work{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("work still there: %v", err)
			}
			return nil
		})
	})

	t.Run("unreachable member", func(t *testing.T) {
		ghost := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "ghost"},
			Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push, APIEndpoint: "https://127.0.0.1:1", InsecureSkipTLSVerification: true}}
		if err := host.Create(ctx, ghost); err != nil {
			t.Fatal(err)
		}
		w := work("ghost-work", "ghost", "", fedtest.Deployment(ns, "ghostly", 1))
		if err := host.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		waitApplied(t, host, w, metav1.ConditionFalse, ReasonClusterUnreachable)
		if err := host.Delete(ctx, w); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		if err := host.Get(ctx, client.ObjectKeyFromObject(w), &workv1alpha1.Work{}); err != nil {
			t.Fatalf("Work of an unreachable but registered cluster let go before cleanup: %v", err)
		}
		if err := host.Delete(ctx, ghost); err != nil {
			t.Fatal(err)
		}
		fedtest.Eventually(t, 30*time.Second, "Work of a deleted cluster released", func() error {
			if err := host.Get(ctx, client.ObjectKeyFromObject(w), &workv1alpha1.Work{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("work still there: %v", err)
			}
			return nil
		})
	})
}
