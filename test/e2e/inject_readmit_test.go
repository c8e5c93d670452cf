package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/fedmesh/fedmesh/pkg/webhook/inject"
	"github.com/fedmesh/fedmesh/test/cluster"
)

// labellingWebhook is a mutating webhook of another tool (a platform's policy engine) that asks for the proxy by
// adding fedmesh.io/inject and the ShardingConfig annotation to the pods it sees. Its registration's name sorts
// after the injection webhook's, so it runs after it, and the API server does not call the injection webhook again
// for the label it adds: reinvocation is only for webhooks that were called already.
type labellingWebhook struct{}

func (labellingWebhook) Handle(_ context.Context, req admission.Request) admission.Response {
	var pod corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		return admission.Errored(400, err)
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Labels[inject.InjectLabel] = "true"
	pod.Annotations[inject.ShardingConfigAnnotation] = "op"
	raw, err := json.Marshal(&pod)
	if err != nil {
		return admission.Errored(500, err)
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, raw)
}

// The Readmitter deletes a pod created before the injection webhook was registered, which its controller makes
// again with the proxy; a pod that got the label from a later webhook it leaves, with a Warning event, since its
// controller would make it again the same way, to be deleted again, forever.
func TestReadmitterDeletesOnlyPodsCreatedBeforeTheRegistration(t *testing.T) {
	c := cluster.New(t, cluster.Options{ControllerManager: true})
	ctx := context.Background()
	cs := c.Clientset()
	createNamespaces(t, cs, "ops")
	pods := cs.CoreV1().Pods("ops")
	w, err := pods.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(c.Config(), ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	events := record.NewFakeRecorder(1000)
	if err := (&inject.Readmitter{Client: mgr.GetClient(), Registration: "fedmesh-proxy-injection", Recorder: events}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = mgr.Start(mctx) }()
	defer func() { cancel(); wg.Wait() }()

	replicaSet := func(name string, labels map[string]string, annotations map[string]string) {
		t.Helper()
		selector := map[string]string{"app": name}
		template := map[string]string{"app": name}
		for k, v := range labels {
			template[k] = v
		}
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: selector},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: template, Annotations: annotations},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "operator:v1"}}}}}}
		if _, err := cs.AppsV1().ReplicaSets("ops").Create(ctx, rs, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A pod asking for the proxy before the webhook is there, as a chart's StatefulSet can win the race with the
	// chart's webhook registration.
	replicaSet("early", map[string]string{inject.InjectLabel: "true"}, map[string]string{inject.ShardingConfigAnnotation: "op"})
	eventually(t, 30*time.Second, "the early pod created", func() (bool, error) {
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "app=early"})
		return err == nil && len(list.Items) == 1, err
	})

	h := &inject.Handler{Options: inject.Options{Image: "fedmesh/proxy:e2e",
		XDSAddress: "fedmesh-manager.fedmesh-system:18000", XDSCA: []byte("xds CA")}}
	base, ca := startWebhookServer(t, map[string]admission.Handler{inject.Path: h, "/add-label": labellingWebhook{}})
	registration := inject.MutatingWebhookConfiguration("fedmesh-proxy-injection",
		admissionregistrationv1.WebhookClientConfig{URL: ptr.To(base + inject.Path), CABundle: ca})
	registered, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, registration, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	labelling := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "policy-engine"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "mutate.policy.example.com",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(base + "/add-label"), CABundle: ca},
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"app": "late"}},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			ReinvocationPolicy:      ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy),
			AdmissionReviewVersions: []string{"v1"}}}}
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, labelling, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the early pod made again with the proxy", func() (bool, error) {
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "app=early"})
		return err == nil && len(list.Items) == 1 && inject.Injected(&list.Items[0]), err
	})
	// Past the slack the Readmitter gives a new registration to come into force.
	time.Sleep(time.Until(registered.CreationTimestamp.Add(11 * time.Second)))

	replicaSet("late", nil, nil)
	created, deleted := map[string]int{}, map[string]int{}
	labelledLate := ""
	timeout := time.After(20 * time.Second)
watching:
	for {
		select {
		case ev := <-w.ResultChan():
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			switch ev.Type {
			case watch.Added:
				created[p.Labels["app"]]++
				if p.Labels["app"] == "late" && inject.Requested(p) && !inject.Injected(p) {
					labelledLate = p.Name
				}
			case watch.Deleted:
				deleted[p.Labels["app"]]++
			}
		case <-timeout:
			break watching
		}
	}
	if created["early"] != 2 || deleted["early"] != 1 {
		t.Errorf("early pods: %d created, %d deleted; want the one created before the registration deleted and made again", created["early"], deleted["early"])
	}
	if created["late"] != 1 || deleted["late"] != 0 || labelledLate == "" {
		t.Errorf("late pods: %d created, %d deleted (one labelled, without the proxy: %q); want one, left as it is", created["late"], deleted["late"], labelledLate)
	}
	warned := false
	for len(events.Events) > 0 {
		if e := <-events.Events; strings.Contains(e, "LabelledAfterAdmission") && strings.Contains(e, "must be in the pod's template") {
			warned = true
		}
	}
	if !warned {
		t.Error("no Warning event says that the label must be in the pod's template")
	}
}
