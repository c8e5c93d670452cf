package binding

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/rendering"
	"github.com/fedmesh/fedmesh/test/fedtest"
	"github.com/go-logr/logr"
)

// TestRenderedAgain runs the binding and binding-status stages against a real host API server, for what must
// bring a binding's Works up to date other than the binding, its template, its policies and its clusters.
func TestRenderedAgain(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	f := fedtest.Start(t, fedtest.Options{Members: 1})
	ctx := context.Background()
	h := f.Host
	startStages(t, f, nil)
	must(t, h.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "demo"}}))

	bind := func(deploy *corev1.ObjectReference, propagateDeps bool, replicas int32) *workv1alpha1.ResourceBinding {
		b := &workv1alpha1.ResourceBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: names.Binding("Deployment", deploy.Name)},
			Spec: workv1alpha1.ResourceBindingSpec{
				Resource:      workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "demo", Name: deploy.Name, UID: deploy.UID},
				Replicas:      replicas,
				PropagateDeps: propagateDeps,
				Clusters:      []workv1alpha1.TargetCluster{{Name: "member1", Replicas: replicas}},
			},
		}
		must(t, h.Create(ctx, b))
		return b
	}

	// The user creates the dependency the binding's condition says is missing, then edits it: the Work follows
	// each within a few seconds, with nothing else changed.
	t.Run("dependency created, then edited", func(t *testing.T) {
		deploy := webDeployment("demo", 1)
		deploy.Name = "late"
		deploy.Spec.Template.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "late-conf"}}}}
		must(t, h.Create(ctx, deploy))
		b := bind(&corev1.ObjectReference{Name: deploy.Name, UID: deploy.UID}, true, 1)
		work := names.Work(b.Name, "member1")
		fedtest.Eventually(t, 20*time.Second, "Work without its dependency", func() error {
			_, ms, err := getWork(ctx, h, work)
			if err != nil {
				return err
			}
			if len(ms) != 1 {
				return fmt.Errorf("manifests %v", kinds(ms))
			}
			return nil
		})
		applied(ctx, t, h, work)
		waitCondition(ctx, t, h, b, metav1.ConditionFalse, rendering.ReasonDependencyNotFound, "dependencies not found: ConfigMap demo/late-conf")

		conf := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "late-conf"}, Data: map[string]string{"k": "v1"}}
		must(t, h.Create(ctx, conf))
		waitDependency(ctx, t, h, work, "late-conf", "v1")
		applied(ctx, t, h, work)
		waitCondition(ctx, t, h, b, metav1.ConditionTrue, rendering.ReasonFullyApplied, "applied in 1 cluster(s)")

		conf.Data["k"] = "v2"
		must(t, h.Update(ctx, conf))
		waitDependency(ctx, t, h, work, "late-conf", "v2")
	})

	// A cluster targeted again while its previous Work is held being deleted (its member unreachable): that Work
	// is not written into nor counted applied, and the cluster gets a new Work once it is gone.
	t.Run("cluster targeted again while its Work is being deleted", func(t *testing.T) {
		deploy := webDeployment("demo", 2)
		deploy.Name = "again"
		must(t, h.Create(ctx, deploy))
		b := bind(&corev1.ObjectReference{Name: deploy.Name, UID: deploy.UID}, false, 1)
		key := client.ObjectKey{Namespace: "demo", Name: names.Work(b.Name, "member1")}
		editWork := func(edit func(*workv1alpha1.Work)) {
			t.Helper()
			must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
				var w workv1alpha1.Work
				if err := h.Get(ctx, key, &w); err != nil {
					return err
				}
				edit(&w)
				return h.Update(ctx, &w)
			}))
		}
		var old workv1alpha1.Work
		fedtest.Eventually(t, 20*time.Second, "first Work", func() error { return h.Get(ctx, key, &old) })
		editWork(func(w *workv1alpha1.Work) { controllerutil.AddFinalizer(w, "test.fedmesh.io/unreachable") })
		applied(ctx, t, h, key.Name)
		waitCondition(ctx, t, h, b, metav1.ConditionTrue, rendering.ReasonFullyApplied, "applied in 1 cluster(s)")

		// Dropped from the targets: the Work is deleted and held by the member's finalizer.
		retarget(ctx, t, h, b, nil)
		var held workv1alpha1.Work
		fedtest.Eventually(t, 20*time.Second, "Work being deleted", func() error {
			must(t, h.Get(ctx, key, &held))
			if held.DeletionTimestamp.IsZero() || controllerutil.ContainsFinalizer(&held, names.ExecutionFinalizer) {
				return fmt.Errorf("deletion %v, finalizers %v", held.DeletionTimestamp, held.Finalizers)
			}
			return nil
		})

		// Targeted again, with another share: the held Work stays as it was; the condition says why not applied.
		retarget(ctx, t, h, b, []workv1alpha1.TargetCluster{{Name: "member1", Replicas: 2}})
		waitCondition(ctx, t, h, b, metav1.ConditionFalse, rendering.ReasonNotFullyApplied,
			"member1: its previous Work is being deleted; a new one follows once it is gone")
		time.Sleep(time.Second)
		var cur workv1alpha1.Work
		must(t, h.Get(ctx, key, &cur))
		if cur.ResourceVersion != held.ResourceVersion {
			t.Errorf("the Work being deleted was written: generation %d, was %d", cur.Generation, held.Generation)
		}

		// The member is back and lets its Work go: a new one is made, with the new share.
		editWork(func(w *workv1alpha1.Work) { controllerutil.RemoveFinalizer(w, "test.fedmesh.io/unreachable") })
		fedtest.Eventually(t, 10*time.Second, "new Work", func() error {
			w, ms, err := getWork(ctx, h, key.Name)
			if err != nil {
				return err
			}
			if w.UID == old.UID || !w.DeletionTimestamp.IsZero() || replicasOf(ms[0]) != 2 {
				return fmt.Errorf("Work %s (deleting %v), replicas %d", w.UID, w.DeletionTimestamp, replicasOf(ms[0]))
			}
			return nil
		})
	})
}

// applied plays the execution controller: the Work is applied at its generation.
func applied(ctx context.Context, t *testing.T, h client.Client, work string) {
	t.Helper()
	must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var w workv1alpha1.Work
		if err := h.Get(ctx, client.ObjectKey{Namespace: "demo", Name: work}, &w); err != nil {
			return err
		}
		w.Status.Conditions = []metav1.Condition{{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionTrue, Reason: "Applied",
			ObservedGeneration: w.Generation, LastTransitionTime: metav1.Now()}}
		return h.Status().Update(ctx, &w)
	}))
}

// retarget sets b's target clusters, as the scheduler does.
func retarget(ctx context.Context, t *testing.T, h client.Client, b *workv1alpha1.ResourceBinding, clusters []workv1alpha1.TargetCluster) {
	t.Helper()
	must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := h.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
			return err
		}
		b.Spec.Clusters = clusters
		return h.Update(ctx, b)
	}))
}

// waitDependency waits a few seconds at most for the Work to carry ConfigMap name with data k=value.
func waitDependency(ctx context.Context, t *testing.T, h client.Client, work, name, value string) {
	t.Helper()
	fedtest.Eventually(t, 5*time.Second, "ConfigMap "+name+" with k="+value+" in the Work", func() error {
		_, ms, err := getWork(ctx, h, work)
		if err != nil {
			return err
		}
		for _, m := range ms[1:] {
			if m.GetKind() == "ConfigMap" && m.GetName() == name {
				if got, _, _ := unstructured.NestedString(m.Object, "data", "k"); got != value {
					return fmt.Errorf("k=%s", got)
				}
				return nil
			}
		}
		return fmt.Errorf("manifests %v", kinds(ms))
	})
}
