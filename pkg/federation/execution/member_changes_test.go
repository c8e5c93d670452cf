package execution

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
	"github.com/fedmesh/fedmesh/pkg/federation/member"
	"github.com/fedmesh/fedmesh/pkg/federation/status"
	"github.com/fedmesh/fedmesh/pkg/federation/verdicts"
	"github.com/fedmesh/fedmesh/pkg/federation/workrecord"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// scale sets a Deployment's replicas through its scale subresource, as an HPA does.
func scale(ctx context.Context, mem kubernetes.Interface, name string, replicas int32) error {
	// The member's deployment controller writes it too: scale the latest.
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := mem.AppsV1().Deployments(ns).GetScale(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Spec.Replicas = replicas
		_, err = mem.AppsV1().Deployments(ns).UpdateScale(ctx, name, s, metav1.UpdateOptions{FieldManager: "horizontal-pod-autoscaler"})
		return err
	})
}

// hpaBetween scales a Deployment, as its HPA would, once, between execution's read of it and its apply.
type hpaBetween struct {
	chain interpreter.Interpreter
	mem   kubernetes.Interface
	to    int32
	done  bool
}

func (h *hpaBetween) Retain(ctx context.Context, desired, observed *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	out, err := h.chain.Retain(ctx, desired, observed)
	if !h.done && observed.GetKind() == "Deployment" {
		h.done = true
		if serr := scale(ctx, h.mem, observed.GetName(), h.to); serr != nil {
			return nil, serr
		}
	}
	return out, err
}

// writerBetween writes a member Deployment, as its deployment controller does through a rollout, between every
// read of it by execution and the apply, once on is set.
type writerBetween struct {
	chain  interpreter.Interpreter
	mem    kubernetes.Interface
	on     bool
	writes int
}

func (h *writerBetween) Retain(ctx context.Context, desired, observed *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	out, err := h.chain.Retain(ctx, desired, observed)
	if h.on && observed.GetKind() == "Deployment" {
		h.writes++
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"rollout-step":"%d"}}}`, h.writes)
		if _, perr := h.mem.AppsV1().Deployments(ns).Patch(ctx, observed.GetName(), types.MergePatchType, []byte(patch),
			metav1.PatchOptions{FieldManager: "kube-controller-manager"}); perr != nil {
			return nil, perr
		}
	}
	return out, err
}

// TestMemberChanges runs execution against what members do to its objects: an HPA scaling a retained field
// during an apply, a finished Job cleaned up by its ttlSecondsAfterFinished, an edit of a federation-owned field.
func TestMemberChanges(t *testing.T) {
	f := fedtest.Start(t, fedtest.Options{Members: 1, Workloads: true})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	host := f.Host
	mem := f.Members[0].Clientset()
	cluster := f.Members[0].Name()
	if err := host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Before any manager runs: this reconciler alone applies its Work.
	t.Run("retained replicas scaled during a re-apply", func(t *testing.T) {
		chain := interpreter.Layers{Native: native.New()}.Chain()
		hook := &hpaBetween{chain: chain, mem: mem, to: 7, done: true}
		applied := &verdicts.Store{Type: workv1alpha1.WorkApplied}
		r := &Reconciler{Client: host, Members: &member.Factory{Host: host}, Retainer: hook, Verdicts: applied,
			Recorder: record.NewFakeRecorder(100), Timeout: 10 * time.Second, ConflictRecheck: time.Minute}
		web := fedtest.Deployment(ns, "race", 2)
		web.Labels[interpreter.RetainReplicasLabel] = "true"
		w := work("race-deployment-"+cluster, cluster, "", web)
		if err := host.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)}); err != nil {
			t.Fatal(err)
		}
		if err := scale(ctx, mem, "race", 5); err != nil {
			t.Fatal(err)
		}
		web.Annotations = map[string]string{"rev": "2"}
		updateManifests(t, host, w, web)
		hook.done = false
		var res ctrl.Result
		var err error
		for i := 0; i < 3; i++ { // a conflict is retried
			if res, err = r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)}); err == nil && res.IsZero() {
				break
			}
		}
		if err != nil || !res.IsZero() {
			t.Fatalf("after three passes: %v, %+v", err, res)
		}
		d, err := mem.AppsV1().Deployments(ns).Get(ctx, "race", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if d.Annotations["rev"] != "2" {
			t.Fatalf("not re-applied: %v", d.Annotations)
		}
		if *d.Spec.Replicas != 7 {
			t.Errorf("member replicas %d after the HPA scaled to 7 during the re-apply: the HPA's write was reverted to the value read before it", *d.Spec.Replicas)
		}
		if err := host.Delete(ctx, w); err != nil { // the manager started below removes it
			t.Fatal(err)
		}
	})

	// A Work rendered before the binding stage stripped them carries revision annotations. They are left to the
	// member rather than sent with its values, so the apply is not conditional on the member object staying as read:
	// a member rolling the Deployment writes it between every read and apply.
	t.Run("a Deployment the member keeps writing takes a Work carrying revision annotations", func(t *testing.T) {
		chain := interpreter.Layers{Native: native.New()}.Chain()
		hook := &writerBetween{chain: chain, mem: mem}
		r := &Reconciler{Client: host, Members: &member.Factory{Host: host}, Retainer: hook,
			Verdicts: &verdicts.Store{Type: workv1alpha1.WorkApplied}, Recorder: record.NewFakeRecorder(100),
			Timeout: 10 * time.Second, ConflictRecheck: time.Minute}
		web := fedtest.Deployment(ns, "rolling", 1)
		web.Annotations = map[string]string{"deployment.kubernetes.io/revision": "3"}
		w := work("rolling-deployment-"+cluster, cluster, "", web)
		if err := host.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)}); err != nil {
			t.Fatal(err)
		}
		web.Spec.Template.Spec.Containers[0].Image = "registry.example/app:2"
		updateManifests(t, host, w, web)
		hook.on = true
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)}); err != nil {
			t.Fatalf("one pass over a Deployment written between each read and apply: %v", err)
		}
		d, err := mem.AppsV1().Deployments(ns).Get(ctx, "rolling", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if img := d.Spec.Template.Spec.Containers[0].Image; img != "registry.example/app:2" {
			t.Errorf("member image %s, the Work says registry.example/app:2", img)
		}
		if hook.writes == 0 {
			t.Error("the member object was never written between a read and an apply: the test proves nothing")
		}
		if err := host.Delete(ctx, w); err != nil { // the manager started below removes it
			t.Fatal(err)
		}
	})

	// The work-status stage writes a Work's status often while a Job runs; the record of what a pass saw finished
	// is written over such a write, not left to a later pass that could find the Job cleaned up and its entry gone.
	t.Run("a record is written over a newer status, not over newer records", func(t *testing.T) {
		r := &Reconciler{Client: host, Members: &member.Factory{Host: host}, Verdicts: &verdicts.Store{Type: workv1alpha1.WorkApplied}}
		w := work("record-job-"+cluster, cluster, "", fedtest.Deployment(ns, "record", 1))
		if err := host.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		read := w.DeepCopy()
		w.Status.Conditions = []metav1.Condition{{Type: "Progress", Status: metav1.ConditionTrue, Reason: "Running", LastTransitionTime: metav1.Now()}}
		if err := host.Status().Update(ctx, w); err != nil {
			t.Fatal(err)
		}
		ref := workrecord.Ref{APIVersion: "batch/v1", Kind: "Job", Namespace: ns, Name: "migrate"}
		finished := []finishedEntry{{Ref: ref, Run: "generation/1"}}
		if err := r.record(ctx, read.DeepCopy(), nil, finished); err != nil {
			t.Fatalf("a record computed before a status write: %v", err)
		}
		var cur workv1alpha1.Work
		if err := host.Get(ctx, client.ObjectKeyFromObject(w), &cur); err != nil {
			t.Fatal(err)
		}
		if got := finishedRecord(cur.Annotations); len(got) != 1 || got[0] != finished[0] {
			t.Fatalf("finished record %v, want %v", got, finished)
		}
		// Records changed since the read: the pass's record is refused, to be computed again.
		if err := r.record(ctx, read.DeepCopy(), []workrecord.Ref{ref}, nil); !apierrors.IsConflict(err) {
			t.Errorf("a record computed from older records: %v, want a conflict", err)
		}
		if err := host.Delete(ctx, w); err != nil {
			t.Fatal(err)
		}
	})

	fedtest.StartManager(t, f.Federation.Host.Config(), func(mgr ctrl.Manager) error {
		chain := interpreter.Layers{Native: native.New()}.Chain()
		members := &member.Factory{Host: mgr.GetAPIReader()}
		applied := &verdicts.Store{Type: workv1alpha1.WorkApplied}
		r := &Reconciler{Client: mgr.GetClient(), Members: members, Retainer: chain, Verdicts: applied,
			Recorder: fedtest.Recorder(t, mgr, "member-changes"), Timeout: 5 * time.Second, ConflictRecheck: 2 * time.Second}
		if err := r.SetupWithManager(mgr); err != nil {
			return err
		}
		return (&status.WorkReconciler{Client: mgr.GetClient(), Members: members, Verdicts: applied, Interpreter: chain,
			SyncPoll: 200 * time.Millisecond, MemberEdits: r}).SetupWithManager(mgr)
	})

	t.Run("a finished Job cleaned up by its TTL is not made again", func(t *testing.T) {
		// The binding stamps the template's generation on the workload; a new one is a new run.
		job := func(generation, image string, labels map[string]any) *unstructured.Unstructured {
			return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "batch/v1", "kind": "Job",
				"metadata": map[string]any{"name": "migrate", "labels": labels,
					"annotations": map[string]any{interpreter.TemplateGenerationAnnotation: generation}},
				"spec": map[string]any{"ttlSecondsAfterFinished": int64(2), "template": map[string]any{"spec": map[string]any{
					"restartPolicy": "Never",
					"tolerations":   []any{map[string]any{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}},
					"containers":    []any{map[string]any{"name": "m", "image": image}}}}}}}
		}
		w := work("migrate-job-"+cluster, cluster, "", job("1", "registry.example/migrate:1", nil))
		if err := host.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		first := ranAndCleanedUp(ctx, t, mem, "migrate", "registry.example/migrate:1", "")
		notMadeAgain(ctx, t, mem, "migrate", 10*time.Second)
		var cur workv1alpha1.Work
		if err := host.Get(ctx, client.ObjectKeyFromObject(w), &cur); err != nil {
			t.Fatal(err)
		}
		if c := meta.FindStatusCondition(cur.Status.Conditions, workv1alpha1.WorkApplied); c == nil || c.Status != metav1.ConditionTrue {
			t.Errorf("Applied %+v after the finished Job went", c)
		}

		// A manifest changed without a new template generation (a label, a new division of the Job) is no new run.
		updateManifests(t, host, w, job("1", "registry.example/migrate:1", map[string]any{"team": "db"}))
		waitApplied(t, host, w, metav1.ConditionTrue, ReasonApplied)
		notMadeAgain(ctx, t, mem, "migrate", 5*time.Second)

		// The template's spec changed: the Job runs again, once.
		updateManifests(t, host, w, job("2", "registry.example/migrate:2", map[string]any{"team": "db"}))
		ranAndCleanedUp(ctx, t, mem, "migrate", "registry.example/migrate:2", first)
		notMadeAgain(ctx, t, mem, "migrate", 10*time.Second)
		if err := host.Delete(ctx, w); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("member edit of a federation-owned field", func(t *testing.T) {
		web := fedtest.Deployment(ns, "drift", 2)
		w := work("drift-deployment-"+cluster, cluster, "", web)
		if err := host.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		waitApplied(t, host, w, metav1.ConditionTrue, ReasonApplied)
		genApplied := deploymentGeneration(t, mem, "drift")
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			d, err := mem.AppsV1().Deployments(ns).Get(ctx, "drift", metav1.GetOptions{})
			if err != nil {
				return err
			}
			d.Spec.Template.Spec.Containers[0].Image = "registry.example/app:hotfix"
			d.Spec.Replicas = ptr.To[int32](9)
			_, err = mem.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		fedtest.Eventually(t, 15*time.Second, "the member edit reverted", func() error {
			d, err := mem.AppsV1().Deployments(ns).Get(ctx, "drift", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if img := d.Spec.Template.Spec.Containers[0].Image; img != "registry.example/app:1" || *d.Spec.Replicas != 2 {
				return fmt.Errorf("image %s replicas %d, the Work says registry.example/app:1 and 2", img, *d.Spec.Replicas)
			}
			return nil
		})
		waitApplied(t, host, w, metav1.ConditionTrue, ReasonApplied)
		// The edit and its revert are two generations; the revert must not wake another apply, and another.
		time.Sleep(3 * time.Second)
		if gen := deploymentGeneration(t, mem, "drift"); gen != genApplied+2 {
			t.Errorf("member generation %d, want %d (applied, edited, reverted): the federation keeps writing its own object", gen, genApplied+2)
		}

		// A field a member controller owns is left to it: an HPA scales a retained replicas field.
		web.Labels[interpreter.RetainReplicasLabel] = "true"
		updateManifests(t, host, w, web)
		waitApplied(t, host, w, metav1.ConditionTrue, ReasonApplied)
		if err := scale(ctx, mem, "drift", 4); err != nil {
			t.Fatal(err)
		}
		genScaled := deploymentGeneration(t, mem, "drift")
		time.Sleep(3 * time.Second)
		d, err := mem.AppsV1().Deployments(ns).Get(ctx, "drift", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if *d.Spec.Replicas != 4 || d.Generation != genScaled {
			t.Errorf("replicas %d generation %d after the HPA scaled to 4 at generation %d: the federation fought the HPA",
				*d.Spec.Replicas, d.Generation, genScaled)
		}
		if err := host.Delete(ctx, w); err != nil {
			t.Fatal(err)
		}
	})

	// A Work rendered before the binding stage stripped them (from a template exported from another cluster, or
	// stamped by the host's own deployment controller) carries revision annotations: they are the member
	// controller's to write, and the two must not take turns writing them.
	t.Run("revision annotations in a Work are left to the member's deployment controller", func(t *testing.T) {
		web := fedtest.Deployment(ns, "promoted", 1)
		// The member's controller counts "1" too: a value it never writes, sent on the first apply, would be the
		// federation's alone, and removed by a later apply.
		web.Annotations = map[string]string{"deployment.kubernetes.io/revision": "1"}
		w := work("promoted-deployment-"+cluster, cluster, "", web)
		if err := host.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		waitApplied(t, host, w, metav1.ConditionTrue, ReasonApplied)
		time.Sleep(2 * time.Second) // the member's controller writes its first revision
		if updates, flips := revisionFlips(ctx, t, mem, "promoted", 3*time.Second); flips > 1 {
			t.Errorf("the revision annotation changed %d times in 3s (%d updates): execution and the member's deployment controller write it in turn", flips, updates)
		}
		// A new pod template rolls the member's copy to its next revision while the Work still says 3.
		web.Spec.Template.Spec.Containers[0].Image = "registry.example/app:2"
		updateManifests(t, host, w, web)
		waitApplied(t, host, w, metav1.ConditionTrue, ReasonApplied)
		time.Sleep(2 * time.Second)
		if updates, flips := revisionFlips(ctx, t, mem, "promoted", 3*time.Second); flips > 1 {
			t.Errorf("after a rollout, the revision annotation changed %d times in 3s (%d updates)", flips, updates)
		}
		if err := host.Delete(ctx, w); err != nil {
			t.Fatal(err)
		}
	})
}

// revisionFlips watches member Deployment name for d, and counts its updates and the changes of its revision
// annotation.
func revisionFlips(ctx context.Context, t *testing.T, mem kubernetes.Interface, name string, d time.Duration) (updates, flips int) {
	t.Helper()
	cur, err := mem.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := mem.AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{
		FieldSelector: "metadata.name=" + name, ResourceVersion: cur.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	last := cur.Annotations["deployment.kubernetes.io/revision"]
	timeout := time.After(d)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("the watch of the member Deployment ended")
			}
			o, ok := ev.Object.(metav1.Object)
			if !ok {
				continue
			}
			updates++
			if v := o.GetAnnotations()["deployment.kubernetes.io/revision"]; v != last {
				flips++
				last = v
			}
		case <-timeout:
			return updates, flips
		}
	}
}

// ranAndCleanedUp waits for Job name, of image and not of uid before, to complete in the member and be removed by
// its ttlSecondsAfterFinished (2s); it returns the Job's uid.
func ranAndCleanedUp(ctx context.Context, t *testing.T, mem kubernetes.Interface, name, image, before string) string {
	t.Helper()
	var uid string
	fedtest.Eventually(t, 40*time.Second, "the Job completed in the member", func() error {
		j, err := mem.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err != nil:
			return err
		case string(j.UID) == before:
			return fmt.Errorf("still the Job of before")
		case j.Spec.TTLSecondsAfterFinished == nil || *j.Spec.TTLSecondsAfterFinished != 2:
			return fmt.Errorf("ttlSecondsAfterFinished %v, the manifest's is 2", j.Spec.TTLSecondsAfterFinished)
		case j.Spec.Template.Spec.Containers[0].Image != image:
			return fmt.Errorf("image %s, want %s", j.Spec.Template.Spec.Containers[0].Image, image)
		case j.Status.Succeeded == 0:
			return fmt.Errorf("not completed: %+v", j.Status)
		}
		uid = string(j.UID)
		return nil
	})
	fedtest.Eventually(t, 30*time.Second, "the finished Job removed by its TTL", func() error {
		j, err := mem.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		case string(j.UID) != uid:
			return fmt.Errorf("the Job was made again (uid %s, first %s)", j.UID, uid)
		}
		return fmt.Errorf("still there")
	})
	return uid
}

// notMadeAgain fails t when Job name shows in the member within d.
func notMadeAgain(ctx context.Context, t *testing.T, mem kubernetes.Interface, name string, d time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if j, err := mem.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
			t.Fatalf("the finished Job, removed by its ttlSecondsAfterFinished, was made again (uid %s)", j.UID)
		}
	}
}
