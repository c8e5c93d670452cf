package binding

import (
	"context"
	"encoding/json"
	"fmt"
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
	"github.com/fedmesh/fedmesh/test/fedtest"
	"github.com/go-logr/logr"
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
	startStages(t, f, func(r *Reconciler, mgr ctrl.Manager) { r.Recorder = mgr.GetEventRecorder("fedmesh-binding") })

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
	touch(ctx, t, h, b, setImage(ctx, t, h, "nginx:1.28"))
	waitTurn(ctx, t, h, work1, "nginx:1.28", turn{generation: 2, phase: "Rolling", unavailable: "1"})
	waitTurn(ctx, t, h, work2, "nginx:1.28", turn{generation: 2, phase: "Waiting", held: true, unavailable: "25%"})
	waitPacedEvent(ctx, t, h, b, "rolling member1 (maxUnavailable 1, maxSurge 0); waiting for a turn member2")

	// member1 halfway (one pod replaced, one unavailable): member2 still waits.
	report(ctx, t, h, work1, 2, 1, 1, 2)
	report(ctx, t, h, work2, 2, 0, 2, 2)
	waitTurn(ctx, t, h, work2, "nginx:1.28", turn{generation: 2, phase: "Waiting", held: true, unavailable: "25%"})
	// member1 done: member2's turn, member1 idle again.
	report(ctx, t, h, work1, 2, 2, 2, 2)
	waitTurn(ctx, t, h, work2, "nginx:1.28", turn{generation: 2, phase: "Rolling", unavailable: "1"})
	waitTurn(ctx, t, h, work1, "nginx:1.28", turn{generation: 2, unavailable: "25%"})
	report(ctx, t, h, work2, 2, 2, 2, 2)
	waitTurn(ctx, t, h, work2, "nginx:1.28", turn{generation: 2, unavailable: "25%"})
	waitPacedEvent(ctx, t, h, b, "every cluster has rolled out")

	// Rolling per cluster (the default): a new image reaches both at once, with the template's strategy.
	must(t, h.Get(ctx, client.ObjectKeyFromObject(b), b))
	b.Spec.RolloutScope = ""
	must(t, h.Update(ctx, b))
	touch(ctx, t, h, b, setImage(ctx, t, h, "nginx:1.29"))
	for _, w := range []string{work1, work2} {
		waitTurn(ctx, t, h, w, "nginx:1.29", turn{unavailable: "25%"})
	}
}

// setImage plays the user: a new image in the template; it returns the template's new resourceVersion.
func setImage(ctx context.Context, t *testing.T, h client.Client, image string) string {
	t.Helper()
	var d appsv1.Deployment
	must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := h.Get(ctx, client.ObjectKey{Namespace: "demo", Name: "web"}, &d); err != nil {
			return err
		}
		d.Spec.Template.Spec.Containers[0].Image = image
		return h.Update(ctx, &d)
	}))
	return d.ResourceVersion
}

// turn is what a cluster's Work should show of its rollout.
type turn struct {
	// generation is the template generation stamped on the workload; 0: none.
	generation int64
	// phase is the Work's rollout phase annotation; "" for none.
	phase string
	held  bool
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
		if img := imageOf(d); img != image || got != want || paused != want.held || fmt.Sprint(s) != "0" {
			return fmt.Errorf("image %s, %+v, paused %v, maxSurge %v", img, got, paused, s)
		}
		return nil
	})
}

// report plays the member: the status the native interpreter reflects of its Deployment, applied from template
// generation tg and caught up.
func report(ctx context.Context, t *testing.T, h client.Client, name string, replicas, updated, available int32, tg int64) {
	t.Helper()
	var w workv1alpha1.Work
	must(t, h.Get(ctx, client.ObjectKey{Namespace: "demo", Name: name}, &w))
	raw, err := json.Marshal(map[string]any{"replicas": replicas, "updatedReplicas": updated, "availableReplicas": available,
		"readyReplicas": available, "generation": w.Generation, "observedGeneration": w.Generation, "templateGeneration": tg})
	must(t, err)
	w.Status.ManifestStatuses = []workv1alpha1.ManifestStatus{{
		Identifier: workv1alpha1.ResourceIdentifier{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Namespace: "demo", Name: "web"},
		Status:     &runtime.RawExtension{Raw: raw}, Health: workv1alpha1.ResourceHealthy,
	}}
	must(t, h.Status().Update(ctx, &w))
}

func waitPacedEvent(ctx context.Context, t *testing.T, h client.Client, b *workv1alpha1.ResourceBinding, note string) {
	t.Helper()
	eventually(t, "event "+note, func() error {
		var events eventsv1.EventList
		must(t, h.List(ctx, &events, client.InNamespace("demo")))
		var seen []string
		for _, e := range events.Items {
			if e.Reason == "RolloutPaced" && e.Regarding.Name == b.Name {
				if e.Note == note {
					return nil
				}
				seen = append(seen, e.Note)
			}
		}
		return fmt.Errorf("RolloutPaced events: %s", strings.Join(seen, " | "))
	})
}
