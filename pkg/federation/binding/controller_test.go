package binding

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/rendering"
	"github.com/fedmesh/fedmesh/pkg/federation/status"
	"github.com/fedmesh/fedmesh/test/fedtest"
	"github.com/fedmesh/fedmesh/test/promtest"
	"github.com/go-logr/logr"
)

// TestBindingController runs the controller alone against a real host API server; the test plays the detector
// (template, binding), the scheduler (spec.clusters) and the execution controller (the Works' Applied condition).
func TestBindingController(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	f := fedtest.Start(t, fedtest.Options{Members: 2})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	h := f.Host

	// Counts the controller's Work updates, to prove it writes none when nothing changed (an unchanged update
	// would not show in the resourceVersion).
	var workUpdates atomic.Int32
	// The binding-status stage runs too: it judges FullyApplied from this stage's outcome and writes it.
	startStages(t, f, func(r *Reconciler, mgr ctrl.Manager) {
		r.Client = countingClient{Client: mgr.GetClient(), workUpdates: &workUpdates}
		r.Recorder = fedtest.Recorder(t, mgr, "fedmesh-binding")
	})

	must(t, h.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "demo"}}))
	must(t, h.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "conf"}, Data: map[string]string{"k": "v"}}))
	deploy := webDeployment("demo", 6)
	deploy.Spec.Template.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}}}}
	must(t, h.Create(ctx, deploy))
	b := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: names.Binding("Deployment", "web")},
		Spec: workv1alpha1.ResourceBindingSpec{
			Resource:      workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "demo", Name: "web", UID: deploy.UID},
			Replicas:      6,
			PropagateDeps: true,
			Clusters:      []workv1alpha1.TargetCluster{{Name: "member1", Replicas: 4}, {Name: "member2", Replicas: 2}},
		},
	}
	must(t, h.Create(ctx, b))
	work1, work2 := names.Work(b.Name, "member1"), names.Work(b.Name, "member2")

	// Divided 4/2: a Work per cluster with its share, the ConfigMap after the Deployment in both.
	for cluster, replicas := range map[string]int64{"member1": 4, "member2": 2} {
		eventually(t, "Work of "+cluster, func() error {
			w, ms, err := getWork(ctx, h, names.Work(b.Name, cluster))
			if err != nil {
				return err
			}
			if got := replicasOf(ms[0]); got != replicas {
				return fmt.Errorf("replicas %d, want %d", got, replicas)
			}
			if len(ms) != 2 || ms[1].GetKind() != "ConfigMap" || ms[1].GetName() != "conf" {
				return fmt.Errorf("manifests %v, want the Deployment then ConfigMap conf", kinds(ms))
			}
			if w.Spec.ClusterName != cluster || w.Labels[names.ClusterLabel] != cluster || w.Labels[names.BindingLabel] != b.Name {
				return fmt.Errorf("cluster %q, labels %v", w.Spec.ClusterName, w.Labels)
			}
			if ref := metav1.GetControllerOf(w); ref == nil || ref.Kind != "ResourceBinding" || ref.Name != b.Name {
				return fmt.Errorf("controller %v", ref)
			}
			if ms[0].GetResourceVersion() != "" || ms[0].GetUID() != "" || ms[0].Object["status"] != nil {
				return fmt.Errorf("server fields kept: %v", ms[0].Object["metadata"])
			}
			return nil
		})
	}
	eventually(t, "finalizer", func() error {
		must(t, h.Get(ctx, client.ObjectKeyFromObject(b), b))
		if !controllerutil.ContainsFinalizer(b, names.BindingFinalizer) {
			return fmt.Errorf("finalizers %v", b.Finalizers)
		}
		return nil
	})

	// The execution controller reports: member1 aborted on a conflict, member2 applied.
	const abort = "Deployment demo/web exists in member1 and is not managed by fedmesh (conflictResolution Abort)"
	setApplied(ctx, t, h, work1, metav1.ConditionFalse, "Conflict", abort)
	setApplied(ctx, t, h, work2, metav1.ConditionTrue, "Applied", "")
	waitCondition(ctx, t, h, b, metav1.ConditionFalse, rendering.ReasonNotFullyApplied, "member1: not applied: "+abort)
	passes := promtest.Reconciles(t, "binding")
	rv1 := setApplied(ctx, t, h, work1, metav1.ConditionTrue, "Applied", "")
	waitCondition(ctx, t, h, b, metav1.ConditionTrue, rendering.ReasonFullyApplied, "applied in 2 cluster(s)")
	// Judged by the binding-status stage from this stage's outcome: a Work being applied is no pass of this stage.
	if n := promtest.Reconciles(t, "binding") - passes; n != 0 {
		t.Errorf("the binding stage passed %v times over a Work being applied, want none", n)
	}
	// The condition and the aggregated status went in the binding-status stage's writes, none of this stage's.
	must(t, h.Get(ctx, client.ObjectKeyFromObject(b), b))
	for _, mf := range b.ManagedFields {
		if mf.Subresource == "status" && mf.Manager != names.StatusFieldManager {
			t.Errorf("binding status written by %s too", mf.Manager)
		}
	}
	// The reconciles the status changes caused wrote no Work.
	rv2 := resourceVersion(ctx, t, h, work2)
	if got := resourceVersion(ctx, t, h, work1); got != rv1 {
		t.Errorf("Work %s rewritten with nothing changed: resourceVersion %s, was %s", work1, got, rv1)
	}
	if n := workUpdates.Load(); n != 0 {
		t.Errorf("%d Work updates with nothing changed", n)
	}

	// An image override for member1 changes member1's Work only; editing the policy re-renders.
	op := &policyv1alpha1.OverridePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "mirror"},
		Spec: policyv1alpha1.OverrideSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}},
			OverrideRules: []policyv1alpha1.RuleWithCluster{{
				TargetCluster: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1"}},
				Overriders: policyv1alpha1.Overriders{ImageOverrider: []policyv1alpha1.ImageOverrider{
					{Component: policyv1alpha1.Registry, Operator: policyv1alpha1.OverriderOpReplace, Value: "mirror.example"},
				}},
			}},
		},
	}
	must(t, h.Create(ctx, op))
	waitImage(ctx, t, h, work1, "mirror.example/nginx:1.27", "OverridePolicy/mirror")
	op.Spec.OverrideRules[0].Overriders.ImageOverrider[0].Value = "mirror2.example"
	must(t, h.Update(ctx, op))
	waitImage(ctx, t, h, work1, "mirror2.example/nginx:1.27", "OverridePolicy/mirror")
	if got := resourceVersion(ctx, t, h, work2); got != rv2 {
		t.Errorf("member2's Work changed by an override for member1: resourceVersion %s, was %s", got, rv2)
	}

	// An override of the dependency (the ConfigMap rendered beside the Deployment) re-renders the binding as it
	// comes and as it goes: nothing else of the binding changed.
	confLabels := &policyv1alpha1.OverridePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "conf-labels"},
		Spec: policyv1alpha1.OverrideSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap", Name: "conf"}},
			OverrideRules: []policyv1alpha1.RuleWithCluster{{
				TargetCluster: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1"}},
				Overriders: policyv1alpha1.Overriders{LabelsOverrider: []policyv1alpha1.LabelAnnotationOverrider{
					{Operator: policyv1alpha1.OverriderOpAdd, Value: map[string]string{"tier": "edge"}},
				}},
			}},
		},
	}
	confTier := func(want string) func() error {
		return func() error {
			_, ms, err := getWork(ctx, h, work1)
			if err != nil {
				return err
			}
			if got := ms[len(ms)-1].GetLabels()["tier"]; ms[len(ms)-1].GetKind() != "ConfigMap" || got != want {
				return fmt.Errorf("ConfigMap %s with tier %q, want %q", ms[len(ms)-1].GetName(), got, want)
			}
			return nil
		}
	}
	must(t, h.Create(ctx, confLabels))
	eventually(t, "the dependency overridden", confTier("edge"))
	must(t, h.Delete(ctx, confLabels))
	eventually(t, "the dependency's override gone", confTier(""))

	// An invalid plaintext override is refused with a clear condition; the previous Works stay.
	setApplied(ctx, t, h, work1, metav1.ConditionTrue, "Applied", "")
	rv1 = resourceVersion(ctx, t, h, work1)
	bad := &policyv1alpha1.OverridePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "bad"},
		Spec: policyv1alpha1.OverrideSpec{OverrideRules: []policyv1alpha1.RuleWithCluster{{
			Overriders: policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{
				{Path: "/spec/paused", Operator: policyv1alpha1.OverriderOpRemove, Value: &apiextensionsv1.JSON{Raw: []byte(`true`)}},
			}},
		}}},
	}
	must(t, h.Create(ctx, bad))
	const invalid = "OverridePolicy/bad is invalid: overrideRules[0].overriders.plaintext[0]: remove of /spec/paused must not have a value (got true)"
	waitCondition(ctx, t, h, b, metav1.ConditionFalse, rendering.ReasonInvalidOverridePolicy,
		"member1: "+invalid+" (its previous Work is kept); member2: "+invalid+" (its previous Work is kept)")
	for work, rv := range map[string]string{work1: rv1, work2: rv2} {
		if got := resourceVersion(ctx, t, h, work); got != rv {
			t.Errorf("Work %s changed under an invalid policy: resourceVersion %s, was %s", work, got, rv)
		}
	}
	eventually(t, "InvalidOverridePolicy event", func() error {
		var events eventsv1.EventList
		must(t, h.List(ctx, &events, client.InNamespace("demo")))
		for _, e := range events.Items {
			if e.Reason == rendering.ReasonInvalidOverridePolicy && e.Type == corev1.EventTypeWarning && e.Regarding.Name == b.Name && strings.Contains(e.Note, invalid) {
				return nil
			}
		}
		return fmt.Errorf("none among %d events", len(events.Items))
	})
	must(t, h.Delete(ctx, bad))
	waitCondition(ctx, t, h, b, metav1.ConditionTrue, rendering.ReasonFullyApplied, "applied in 2 cluster(s)")

	// A dependency that does not exist is a condition; the Works still carry the rest.
	must(t, h.Get(ctx, client.ObjectKeyFromObject(deploy), deploy))
	deploy.Spec.Template.Spec.Containers[0].EnvFrom = append(deploy.Spec.Template.Spec.Containers[0].EnvFrom,
		corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}}})
	must(t, h.Update(ctx, deploy))
	touch(ctx, t, h, b, deploy.ResourceVersion) // as the detector does when the template changes
	waitCondition(ctx, t, h, b, metav1.ConditionFalse, rendering.ReasonDependencyNotFound,
		"dependencies not found: Secret demo/absent; member1: the latest manifests are not applied yet; member2: the latest manifests are not applied yet")
	eventually(t, "Work with the new template", func() error {
		_, ms, err := getWork(ctx, h, work2)
		if err != nil {
			return err
		}
		if env := fmt.Sprint(ms[0].Object["spec"]); !strings.Contains(env, "absent") || len(ms) != 2 {
			return fmt.Errorf("manifests %v not re-rendered", kinds(ms))
		}
		return nil
	})

	// member2 is failed over from gracefully: no longer targeted, its Work stays, as it is, while its eviction task
	// does; then it goes.
	setApplied(ctx, t, h, work1, metav1.ConditionTrue, "Applied", "")
	rv2 = resourceVersion(ctx, t, h, work2)
	editBinding := func(edit func(*workv1alpha1.ResourceBinding)) {
		t.Helper()
		must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := h.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
				return err
			}
			edit(b)
			return h.Update(ctx, b)
		}))
	}
	editBinding(func(b *workv1alpha1.ResourceBinding) {
		b.Spec.Clusters = b.Spec.Clusters[:1]
		b.Spec.GracefulEvictionTasks = []workv1alpha1.GracefulEvictionTask{{FromCluster: "member2", Reason: "TaintUntolerated", Producer: "test"}}
	})
	// (The dependency is still missing; member2 is no longer among what is judged.)
	waitCondition(ctx, t, h, b, metav1.ConditionFalse, rendering.ReasonDependencyNotFound, "dependencies not found: Secret demo/absent")
	if got := resourceVersion(ctx, t, h, work2); got != rv2 {
		t.Errorf("the Work of a cluster being evicted gracefully changed: resourceVersion %s, was %s", got, rv2)
	}
	// A task of purgeMode Directly (application failover's) keeps no copy: the Work goes while the task stays.
	editBinding(func(b *workv1alpha1.ResourceBinding) {
		b.Spec.GracefulEvictionTasks[0].Reason, b.Spec.GracefulEvictionTasks[0].PurgeMode = "ApplicationFailure", "Directly"
	})
	eventually(t, "member2's Work deleted", func() error { return gone(ctx, h, work2) })
	editBinding(func(b *workv1alpha1.ResourceBinding) { b.Spec.GracefulEvictionTasks = nil })

	// Deleting the binding deletes its Works and waits until they are gone (a finalizer stands in for the execution
	// controller's).
	// The finalizers change under retries: the stand-in execution controller edits the same Work's finalizers.
	w1 := &workv1alpha1.Work{}
	editWork := func(edit func(*workv1alpha1.Work)) {
		t.Helper()
		must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := h.Get(ctx, client.ObjectKey{Namespace: "demo", Name: work1}, w1); err != nil {
				return err
			}
			edit(w1)
			return h.Update(ctx, w1)
		}))
	}
	editWork(func(w *workv1alpha1.Work) { controllerutil.AddFinalizer(w, "test.fedmesh.io/hold") })
	must(t, h.Delete(ctx, b))
	eventually(t, "Work deleting", func() error {
		must(t, h.Get(ctx, client.ObjectKey{Namespace: "demo", Name: work1}, w1))
		if w1.DeletionTimestamp.IsZero() {
			return fmt.Errorf("not deleted yet")
		}
		return nil
	})
	if err := h.Get(ctx, client.ObjectKeyFromObject(b), &workv1alpha1.ResourceBinding{}); err != nil {
		t.Fatalf("binding went before its Work: %v", err)
	}
	editWork(func(w *workv1alpha1.Work) { controllerutil.RemoveFinalizer(w, "test.fedmesh.io/hold") })
	eventually(t, "binding deleted", func() error { return gone(ctx, h, "") })

	// A binding the scheduler found no cluster for: FullyApplied says so once the scheduler had its say, not before.
	lonely := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "lonely"},
		Spec:       workv1alpha1.ResourceBindingSpec{Resource: b.Spec.Resource, Replicas: 1},
	}
	must(t, h.Create(ctx, lonely))
	time.Sleep(time.Second)
	must(t, h.Get(ctx, client.ObjectKeyFromObject(lonely), lonely))
	if c := meta.FindStatusCondition(lonely.Status.Conditions, workv1alpha1.ConditionFullyApplied); c != nil {
		t.Errorf("FullyApplied before the scheduler looked: %+v", c)
	}
	meta.SetStatusCondition(&lonely.Status.Conditions, metav1.Condition{Type: workv1alpha1.ConditionScheduled, Status: metav1.ConditionFalse,
		Reason: "Unschedulable", Message: "no cluster fits", ObservedGeneration: lonely.Generation})
	must(t, h.Status().Update(ctx, lonely))
	waitCondition(ctx, t, h, lonely, metav1.ConditionFalse, rendering.ReasonNotScheduled, "the binding has no target clusters")

	// A cluster being deleted loses its Work even while the binding still targets it (no other cluster fits), so
	// that its objects go while its credentials are there: unjoin holds the Cluster with a finalizer for that.
	leaving := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "leaving"},
		Spec: workv1alpha1.ResourceBindingSpec{Resource: b.Spec.Resource, Replicas: 1,
			Clusters: []workv1alpha1.TargetCluster{{Name: "member2", Replicas: 1}}},
	}
	must(t, h.Create(ctx, leaving))
	leavingWork := names.Work(leaving.Name, "member2")
	eventually(t, "Work of member2", func() error { _, _, err := getWork(ctx, h, leavingWork); return err })
	member2 := &clusterv1alpha1.Cluster{}
	must(t, h.Get(ctx, client.ObjectKey{Name: "member2"}, member2))
	controllerutil.AddFinalizer(member2, "test.fedmesh.io/hold")
	must(t, h.Update(ctx, member2))
	must(t, h.Delete(ctx, member2))
	eventually(t, "the Work of member2, being deleted, deleted", func() error { return gone(ctx, h, leavingWork) })
	waitCondition(ctx, t, h, leaving, metav1.ConditionFalse, rendering.ReasonRenderFailed, "member2: cluster member2 is being deleted; its Work goes")
	must(t, h.Get(ctx, client.ObjectKey{Name: "member2"}, member2))
	controllerutil.RemoveFinalizer(member2, "test.fedmesh.io/hold")
	must(t, h.Update(ctx, member2))
}

// webDeployment is the Deployment web in namespace ns, of one nginx container.
func webDeployment(ns string, replicas int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
			},
		},
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if err = f(); err == nil {
			return
		}
	}
	t.Fatalf("%s: %v", what, err)
}

func getWork(ctx context.Context, h client.Client, name string) (*workv1alpha1.Work, []*unstructured.Unstructured, error) {
	var w workv1alpha1.Work
	if err := h.Get(ctx, client.ObjectKey{Namespace: "demo", Name: name}, &w); err != nil {
		return nil, nil, err
	}
	var ms []*unstructured.Unstructured
	for _, m := range w.Spec.Workload.Manifests {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(m.Raw); err != nil {
			return nil, nil, err
		}
		ms = append(ms, u)
	}
	return &w, ms, nil
}

func replicasOf(u *unstructured.Unstructured) int64 {
	n, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	return n
}

func imageOf(u *unstructured.Unstructured) string {
	cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	return fmt.Sprint(cs[0].(map[string]any)["image"])
}

func kinds(ms []*unstructured.Unstructured) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.GetKind()+"/"+m.GetName())
	}
	return out
}

// setApplied plays the execution controller: it sets the Work's Applied condition and returns its resourceVersion.
func setApplied(ctx context.Context, t *testing.T, h client.Client, name string, status metav1.ConditionStatus, reason, msg string) string {
	t.Helper()
	var w workv1alpha1.Work
	must(t, h.Get(ctx, client.ObjectKey{Namespace: "demo", Name: name}, &w))
	meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: workv1alpha1.WorkApplied, Status: status, Reason: reason, Message: msg, ObservedGeneration: w.Generation})
	must(t, h.Status().Update(ctx, &w))
	return w.ResourceVersion
}

func resourceVersion(ctx context.Context, t *testing.T, h client.Client, name string) string {
	t.Helper()
	var w workv1alpha1.Work
	must(t, h.Get(ctx, client.ObjectKey{Namespace: "demo", Name: name}, &w))
	return w.ResourceVersion
}

func waitCondition(ctx context.Context, t *testing.T, h client.Client, b *workv1alpha1.ResourceBinding, status metav1.ConditionStatus, reason, msg string) {
	t.Helper()
	eventually(t, "FullyApplied "+reason, func() error {
		var cur workv1alpha1.ResourceBinding
		must(t, h.Get(ctx, client.ObjectKeyFromObject(b), &cur))
		c := meta.FindStatusCondition(cur.Status.Conditions, workv1alpha1.ConditionFullyApplied)
		if c == nil || c.Status != status || c.Reason != reason || c.Message != msg {
			return fmt.Errorf("condition %+v", c)
		}
		return nil
	})
}

func waitImage(ctx context.Context, t *testing.T, h client.Client, name, image, overrides string) {
	t.Helper()
	eventually(t, "image "+image, func() error {
		w, ms, err := getWork(ctx, h, name)
		if err != nil {
			return err
		}
		if got := imageOf(ms[0]); got != image || w.Annotations[AppliedOverridesAnnotation] != overrides {
			return fmt.Errorf("image %s, applied overrides %q", got, w.Annotations[AppliedOverridesAnnotation])
		}
		return nil
	})
}

// touch records a new template resourceVersion on the binding, which is what brings the binding controller back.
func touch(ctx context.Context, t *testing.T, h client.Client, b *workv1alpha1.ResourceBinding, rv string) {
	t.Helper()
	// The binding-status stage writes the binding's status meanwhile: a conflict is read again and retried.
	must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := h.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
			return err
		}
		b.Spec.Resource.ResourceVersion = rv
		return h.Update(ctx, b)
	}))
}

// gone is nil once the named Work (or, for "", the binding) no longer exists.
func gone(ctx context.Context, h client.Client, work string) error {
	var err error
	if work == "" {
		err = h.Get(ctx, client.ObjectKey{Namespace: "demo", Name: names.Binding("Deployment", "web")}, &workv1alpha1.ResourceBinding{})
	} else {
		err = h.Get(ctx, client.ObjectKey{Namespace: "demo", Name: work}, &workv1alpha1.Work{})
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	return fmt.Errorf("still there (%v)", err)
}

// countingClient counts the updates of Works.
type countingClient struct {
	client.Client
	workUpdates *atomic.Int32
}

func (c countingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if _, ok := obj.(*workv1alpha1.Work); ok {
		c.workUpdates.Add(1)
	}
	return c.Client.Update(ctx, obj, opts...)
}

// startStages runs the binding stage, as configure leaves it, and the binding-status stage (which judges
// FullyApplied from the binding stage's outcome) against f's host, and releases the Works' execution finalizer
// as the execution stage would.
func startStages(t *testing.T, f *fedtest.Federation, configure func(r *Reconciler, mgr ctrl.Manager)) {
	t.Helper()
	startStagesOn(t, f.Federation.Host.Config(), configure)
}

// startStagesOn is startStages against the host API server cfg reaches.
func startStagesOn(t *testing.T, cfg *rest.Config, configure func(r *Reconciler, mgr ctrl.Manager)) {
	t.Helper()
	fedtest.StartManager(t, cfg, func(mgr ctrl.Manager) error {
		chain := interpreter.Layers{Native: native.New()}.Chain()
		renderings := &rendering.Store{}
		r := &Reconciler{Client: mgr.GetClient(), Interpreter: chain, Renderings: renderings}
		if configure != nil {
			configure(r, mgr)
		}
		if err := r.SetupWithManager(mgr); err != nil {
			return err
		}
		return (&status.BindingReconciler{Client: mgr.GetClient(), Aggregator: chain, Renderings: renderings}).SetupWithManager(mgr)
	})
	fedtest.StartManager(t, cfg, fedtest.ReleaseFinalizer(&workv1alpha1.Work{}, names.ExecutionFinalizer))
}
