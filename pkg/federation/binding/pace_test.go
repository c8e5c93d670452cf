package binding

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/workrecord"
	"github.com/fedmesh/fedmesh/test/fedtest"
	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
)

// TestPacedRollout runs the binding stage against a real host API server with a binding whose rollout is paced
// across clusters (rolloutScope Federation); the test plays the detector (template, binding) and the members'
// reports (the Works' status). A new image with maxUnavailable 25% and maxSurge 0 over 2+2 replicas: one pod's
// worth of budget, so member1 rolls first with all of it while member2 waits paused, then member2.
func TestPacedRollout(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	f := fedtest.Start(t, fedtest.Options{Members: 2})
	ctx := t.Context()
	h := f.Host
	startStages(t, f, func(r *Reconciler, mgr ctrl.Manager) { r.Recorder = fedtest.Recorder(t, mgr, "fedmesh-binding") })

	must(t, h.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "demo"}}))
	deploy := webDeployment("demo", 4)
	deploy.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
		MaxUnavailable: ptr.To(intstr.FromString("25%")), MaxSurge: ptr.To(intstr.FromInt32(0))}}
	must(t, h.Create(ctx, deploy))
	b := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: names.Binding("Deployment", "web")},
		Spec: workv1alpha1.ResourceBindingSpec{
			Resource:     workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "demo", Name: "web", UID: deploy.UID, ResourceVersion: deploy.ResourceVersion},
			Replicas:     4,
			RolloutScope: policyv1alpha1.FederationRolloutScope,
			Clusters:     []workv1alpha1.TargetCluster{{Name: "member1", Replicas: 2}, {Name: "member2", Replicas: 2}},
		},
	}
	must(t, h.Create(ctx, b))
	work1, work2 := names.Work(b.Name, "member1"), names.Work(b.Name, "member2")

	// New copies take no turn: each Work carries the template's own strategy, unpaused, and the generation.
	for _, w := range []string{work1, work2} {
		waitTurn(ctx, t, h, w, "nginx:1.27", turn{generation: 1, unavailable: "25%"})
		report(ctx, t, h, w, 2, 2, 2, 1)
	}

	// The new image: member1 rolls with the whole budget, member2 gets the template paused and waits.
	touch(ctx, t, h, b, editTemplate(ctx, t, h, withImage("nginx:1.28")))
	waitTurn(ctx, t, h, work1, "nginx:1.28", turn{generation: 2, phase: "Rolling", unavailable: "1"})
	waitTurn(ctx, t, h, work2, "nginx:1.28", turn{generation: 2, phase: "Waiting", held: true, paused: true, unavailable: "25%"})
	waitPacedEvent(ctx, t, h, b, "RolloutPaced", "rolling member1 (maxUnavailable 1, maxSurge 0); waiting for a turn member2")

	// member1 halfway (one pod replaced, one unavailable): member2 still waits.
	report(ctx, t, h, work1, 2, 1, 1, 2)
	report(ctx, t, h, work2, 2, 0, 2, 2)
	waitTurn(ctx, t, h, work2, "nginx:1.28", turn{generation: 2, phase: "Waiting", held: true, paused: true, unavailable: "25%"})
	// member1 done: member2's turn, member1 idle again.
	report(ctx, t, h, work1, 2, 2, 2, 2)
	waitTurn(ctx, t, h, work2, "nginx:1.28", turn{generation: 2, phase: "Rolling", unavailable: "1"})
	waitTurn(ctx, t, h, work1, "nginx:1.28", turn{generation: 2, unavailable: "25%"})
	waitPacedEvent(ctx, t, h, b, "RolloutPaced", "rolling member2 (maxUnavailable 1, maxSurge 0)")
	report(ctx, t, h, work2, 2, 2, 2, 2)
	waitTurn(ctx, t, h, work2, "nginx:1.28", turn{generation: 2, unavailable: "25%"})
	waitPacedEvent(ctx, t, h, b, "RolloutDone", "every cluster has rolled out")

	// The owner pauses the template with a new image: the copies are paused as the template is (nothing to pace),
	// their pods still on the old image. Resumed, the clusters take turns again.
	touch(ctx, t, h, b, editTemplate(ctx, t, h, withImage("nginx:1.29"), func(d *appsv1.Deployment) { d.Spec.Paused = true }))
	for _, w := range []string{work1, work2} {
		waitTurn(ctx, t, h, w, "nginx:1.29", turn{generation: 3, paused: true, unavailable: "25%"})
		report(ctx, t, h, w, 2, 0, 2, 3)
	}
	touch(ctx, t, h, b, editTemplate(ctx, t, h, func(d *appsv1.Deployment) { d.Spec.Paused = false }))
	waitTurn(ctx, t, h, work1, "nginx:1.29", turn{generation: 4, phase: "Rolling", unavailable: "1"})
	waitTurn(ctx, t, h, work2, "nginx:1.29", turn{generation: 4, phase: "Waiting", held: true, paused: true, unavailable: "25%"})
	report(ctx, t, h, work1, 2, 2, 2, 4)
	waitTurn(ctx, t, h, work2, "nginx:1.29", turn{generation: 4, phase: "Rolling", unavailable: "1"})
	report(ctx, t, h, work2, 2, 2, 2, 4)
	waitTurn(ctx, t, h, work2, "nginx:1.29", turn{generation: 4, unavailable: "25%"})

	// Back to rolling per cluster (the default) in the middle of a rollout: the waiting cluster is released, both
	// roll at once with the template's strategy, and an event says so.
	touch(ctx, t, h, b, editTemplate(ctx, t, h, withImage("nginx:1.30")))
	waitTurn(ctx, t, h, work2, "nginx:1.30", turn{generation: 5, phase: "Waiting", held: true, paused: true, unavailable: "25%"})
	must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := h.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
			return err
		}
		b.Spec.RolloutScope = ""
		return h.Update(ctx, b)
	}))
	for _, w := range []string{work1, work2} {
		waitTurn(ctx, t, h, w, "nginx:1.30", turn{generation: 5, unavailable: "25%"})
	}
	waitPacedEvent(ctx, t, h, b, "RolloutUnpaced", "the rollout is no longer paced across clusters (rolloutScope is no longer Federation): each cluster rolls on its own")
}

// TestPacedRolloutKeepsOldDependencies: a paced rollout whose template switches a dependency (envFrom conf-v1 to
// conf-v2, with a new image). A cluster that has not finished its turn still runs pods reading conf-v1 (the waiting
// cluster's paused copy, the rolling cluster's old ReplicaSet): its Work holds conf-v1 beside conf-v2 until the
// cluster is idle again, and only then drops it and records it for removal from the member.
func TestPacedRolloutKeepsOldDependencies(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	f := fedtest.Start(t, fedtest.Options{Members: 2})
	ctx := t.Context()
	h := f.Host
	startStages(t, f, nil)

	must(t, h.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "demo"}}))
	for _, n := range []string{"conf-v1", "conf-v2"} {
		must(t, h.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: n}, Data: map[string]string{"v": n}}))
	}
	deploy := webDeployment("demo", 4)
	withEnvFrom("conf-v1")(deploy)
	deploy.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
		MaxUnavailable: ptr.To(intstr.FromString("25%")), MaxSurge: ptr.To(intstr.FromInt32(0))}}
	must(t, h.Create(ctx, deploy))
	b := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: names.Binding("Deployment", "web")},
		Spec: workv1alpha1.ResourceBindingSpec{
			Resource:      workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "demo", Name: "web", UID: deploy.UID, ResourceVersion: deploy.ResourceVersion},
			Replicas:      4,
			PropagateDeps: true,
			RolloutScope:  policyv1alpha1.FederationRolloutScope,
			Clusters:      []workv1alpha1.TargetCluster{{Name: "member1", Replicas: 2}, {Name: "member2", Replicas: 2}},
		},
	}
	must(t, h.Create(ctx, b))
	work1, work2 := names.Work(b.Name, "member1"), names.Work(b.Name, "member2")
	for _, w := range []string{work1, work2} {
		waitTurn(ctx, t, h, w, "nginx:1.27", turn{generation: 1, unavailable: "25%"})
		waitDependencies(ctx, t, h, w, []string{"ConfigMap/conf-v1"}, nil)
		report(ctx, t, h, w, 2, 2, 2, 1)
	}

	// member1 rolls, member2 waits: both keep conf-v1 beside conf-v2.
	touch(ctx, t, h, b, editTemplate(ctx, t, h, withImage("nginx:1.28"), withEnvFrom("conf-v2")))
	waitTurn(ctx, t, h, work1, "nginx:1.28", turn{generation: 2, phase: "Rolling", unavailable: "1"})
	waitTurn(ctx, t, h, work2, "nginx:1.28", turn{generation: 2, phase: "Waiting", held: true, paused: true, unavailable: "25%"})
	for _, w := range []string{work1, work2} {
		waitDependencies(ctx, t, h, w, []string{"ConfigMap/conf-v2", "ConfigMap/conf-v1"}, nil)
	}

	// member1 done and idle: its Work drops conf-v1 for the execution stage to remove; member2, rolling now, keeps it.
	report(ctx, t, h, work1, 2, 2, 2, 2)
	waitTurn(ctx, t, h, work2, "nginx:1.28", turn{generation: 2, phase: "Rolling", unavailable: "1"})
	waitTurn(ctx, t, h, work1, "nginx:1.28", turn{generation: 2, unavailable: "25%"})
	waitDependencies(ctx, t, h, work1, []string{"ConfigMap/conf-v2"}, []string{"ConfigMap demo/conf-v1"})
	waitDependencies(ctx, t, h, work2, []string{"ConfigMap/conf-v2", "ConfigMap/conf-v1"}, nil)

	// member2 done: it drops conf-v1 too.
	report(ctx, t, h, work2, 2, 2, 2, 2)
	waitTurn(ctx, t, h, work2, "nginx:1.28", turn{generation: 2, unavailable: "25%"})
	waitDependencies(ctx, t, h, work2, []string{"ConfigMap/conf-v2"}, []string{"ConfigMap demo/conf-v1"})
}

// withEnvFrom has the template's container read its environment from ConfigMap name, a dependency of the template.
func withEnvFrom(name string) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}}}}
	}
}

// waitDependencies waits until Work name holds the dependencies deps ("Kind/name", in order after the workload)
// and its record of objects to remove from the member is removing (workrecord refs as strings).
func waitDependencies(ctx context.Context, t *testing.T, h client.Client, name string, deps, removing []string) {
	t.Helper()
	eventually(t, fmt.Sprintf("%s: dependencies %v, removing %v", name, deps, removing), func() error {
		w, ms, err := getWork(ctx, h, name)
		if err != nil {
			return err
		}
		var recorded []string
		for _, r := range workrecord.Parse(w.Annotations) {
			recorded = append(recorded, r.String())
		}
		if got := kinds(ms[1:]); !slices.Equal(got, deps) || !slices.Equal(recorded, removing) {
			return fmt.Errorf("dependencies %v, removing %v", got, recorded)
		}
		return nil
	})
}

// withImage sets the template's image.
func withImage(name string) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = name }
}

// editTemplate plays the user: it changes the template; it returns the template's new resourceVersion.
func editTemplate(ctx context.Context, t *testing.T, h client.Client, edits ...func(*appsv1.Deployment)) string {
	t.Helper()
	var d appsv1.Deployment
	must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := h.Get(ctx, client.ObjectKey{Namespace: "demo", Name: "web"}, &d); err != nil {
			return err
		}
		for _, edit := range edits {
			edit(&d)
		}
		return h.Update(ctx, &d)
	}))
	return d.ResourceVersion
}

// turn is what a cluster's Work should show of its rollout.
type turn struct {
	// generation is the template generation stamped on the workload (every one, paced or not).
	generation int64
	// phase is the Work's rollout phase annotation; "" for none.
	phase string
	// held: paused and marked held; paused: paused (by fedmesh when held, else by the template's owner).
	held, paused bool
	// unavailable is the workload's maxUnavailable (its maxSurge is 0 throughout): the cluster's grant when it
	// rolls (a number), the template's own otherwise ("25%").
	unavailable string
}

// waitTurn waits until Work name holds image and shows want.
func waitTurn(ctx context.Context, t *testing.T, h client.Client, name, image string, want turn) {
	t.Helper()
	eventually(t, fmt.Sprintf("%s: %s %+v", name, image, want), func() error {
		w, ms, err := getWork(ctx, h, name)
		if err != nil {
			return err
		}
		d := ms[0]
		paused, _, _ := unstructured.NestedBool(d.Object, "spec", "paused")
		u, _, _ := unstructured.NestedFieldNoCopy(d.Object, "spec", "strategy", "rollingUpdate", "maxUnavailable")
		s, _, _ := unstructured.NestedFieldNoCopy(d.Object, "spec", "strategy", "rollingUpdate", "maxSurge")
		got := turn{phase: w.Annotations[names.RolloutPhaseAnnotation], held: d.GetAnnotations()[names.RolloutHeldAnnotation] == "true"}
		fmt.Sscan(d.GetAnnotations()[interpreter.TemplateGenerationAnnotation], &got.generation)
		got.unavailable = fmt.Sprint(u)
		got.paused = paused
		if img := imageOf(d); img != image || got != want || fmt.Sprint(s) != "0" {
			return fmt.Errorf("image %s, %+v, paused %v, maxSurge %v", img, got, paused, s)
		}
		return nil
	})
}

// report plays the member: the status the native interpreter reflects of its Deployment once it has the Work's
// copy (applied from template generation tg, with the copy's pod template hash) and caught up.
func report(ctx context.Context, t *testing.T, h client.Client, name string, replicas, updated, available int32, tg int64) {
	t.Helper()
	w, ms, err := getWork(ctx, h, name)
	must(t, err)
	st := map[string]any{"replicas": replicas, "updatedReplicas": updated, "availableReplicas": available,
		"unavailableReplicas": replicas - available, "readyReplicas": available,
		"generation": w.Generation, "observedGeneration": w.Generation, "resourceTemplateGeneration": tg}
	if hash, ok := ms[0].GetAnnotations()[names.PodTemplateHashAnnotation]; ok {
		st["podTemplateHash"] = hash
	}
	raw, err := json.Marshal(st)
	must(t, err)
	w.Status.ManifestStatuses = []workv1alpha1.ManifestStatus{{
		Identifier: workv1alpha1.ResourceIdentifier{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Namespace: "demo", Name: "web"},
		Status:     &runtime.RawExtension{Raw: raw}, Health: workv1alpha1.ResourceHealthy,
	}}
	must(t, h.Status().Update(ctx, w))
}

// waitPacedEvent waits for an event of reason with note on b.
func waitPacedEvent(ctx context.Context, t *testing.T, h client.Client, b *workv1alpha1.ResourceBinding, reason, note string) {
	t.Helper()
	eventually(t, "event "+note, func() error {
		var events eventsv1.EventList
		must(t, h.List(ctx, &events, client.InNamespace("demo")))
		var seen []string
		for _, e := range events.Items {
			if e.Reason == reason && e.Regarding.Name == b.Name {
				if e.Note == note {
					return nil
				}
				seen = append(seen, e.Note)
			}
		}
		return fmt.Errorf("%s events: %s", reason, strings.Join(seen, " | "))
	})
}

// A cluster that has not finished its turn keeps the dependencies its Work had, beside the new template's.
func TestKeepOldDependencies(t *testing.T) {
	const (
		web    = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"namespace":"demo","name":"web"},"spec":{"x":"new"}}`
		oldWeb = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"namespace":"demo","name":"web"},"spec":{"x":"old"}}`
		v1     = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"demo","name":"conf-v1"},"data":{"v":"1"}}`
		v1New  = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"demo","name":"conf-v1"},"data":{"v":"1b"}}`
		v1Bare = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"conf-v1"},"data":{"v":"1"}}`
		v2     = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"demo","name":"conf-v2"},"data":{"v":"2"}}`
		sec    = `{"apiVersion":"v1","kind":"Secret","metadata":{"namespace":"demo","name":"conf-v1"}}`
		hpaV1  = `{"apiVersion":"autoscaling/v1","kind":"HorizontalPodAutoscaler","metadata":{"namespace":"demo","name":"web"}}`
		hpaV2  = `{"apiVersion":"autoscaling/v2","kind":"HorizontalPodAutoscaler","metadata":{"namespace":"demo","name":"web"}}`
		nobody = `{"kind":"ConfigMap"}`
	)
	for _, tc := range []struct {
		name               string
		desired, had, want []string
	}{{
		name:    "a new Work has nothing to keep",
		desired: []string{web, v2},
		want:    []string{web, v2},
	}, {
		name:    "a Work of the workload alone has nothing to keep",
		desired: []string{web, v2},
		had:     []string{oldWeb},
		want:    []string{web, v2},
	}, {
		name:    "a switched dependency: the old one stays beside the new",
		desired: []string{web, v2},
		had:     []string{oldWeb, v1},
		want:    []string{web, v2, v1},
	}, {
		name:    "dependencies the template no longer has at all stay",
		desired: []string{web},
		had:     []string{oldWeb, v1, sec},
		want:    []string{web, v1, sec},
	}, {
		name:    "a dependency in both goes out in its new version, once",
		desired: []string{web, v1New},
		had:     []string{oldWeb, v1},
		want:    []string{web, v1New},
	}, {
		name:    "a manifest leaving its namespace to the Work names the same object",
		desired: []string{web, v1New},
		had:     []string{oldWeb, v1Bare},
		want:    []string{web, v1New},
	}, {
		name:    "another version of the group names the same object",
		desired: []string{web, hpaV2},
		had:     []string{oldWeb, hpaV1},
		want:    []string{web, hpaV2},
	}, {
		name:    "another kind of the same name is another object",
		desired: []string{web, v1},
		had:     []string{oldWeb, sec},
		want:    []string{web, v1, sec},
	}, {
		name:    "kept once though the old Work had it twice; a manifest naming nothing is not kept",
		desired: []string{web},
		had:     []string{oldWeb, v1, nobody, v1},
		want:    []string{web, v1},
	}, {
		name:    "the old workload is never kept as a dependency",
		desired: []string{web, v2},
		had:     []string{oldWeb, v2},
		want:    []string{web, v2},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			// With room to grow: what it keeps must not land in the array the caller passed.
			desired := make([]workv1alpha1.Manifest, len(tc.desired), len(tc.desired)+4)
			copy(desired, rawManifests(tc.desired))
			before := manifestRaws(desired[:cap(desired)])
			got := keepOldDependencies(desired, rawManifests(tc.had), "demo")
			if diff := cmp.Diff(tc.want, manifestRaws(got)); diff != "" {
				t.Errorf("manifests (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, manifestRaws(desired[:cap(desired)])); diff != "" {
				t.Errorf("desired's array changed (-before +after):\n%s", diff)
			}
		})
	}
}

func rawManifests(raws []string) []workv1alpha1.Manifest {
	var out []workv1alpha1.Manifest
	for _, r := range raws {
		out = append(out, workv1alpha1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(r)}})
	}
	return out
}

func manifestRaws(ms []workv1alpha1.Manifest) []string {
	var out []string
	for _, m := range ms {
		out = append(out, string(m.Raw))
	}
	return out
}
