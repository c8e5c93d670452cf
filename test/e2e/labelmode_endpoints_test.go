package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/shard"
	"github.com/fedmesh/fedmesh/pkg/webhook/labels"
	"github.com/fedmesh/fedmesh/test/cluster"
)

// TestLabelModeKeepsEndpointsInTheShardsView: the EndpointSlice and Endpoints controllers set their objects' labels
// to the Service's at every sync. With the label webhook and the backfill running as the manager runs them, a shard
// watching a Service's EndpointSlice and Endpoints with the bucket selector (as its proxy does in label mode) keeps
// seeing them while backends come up: never DELETED while they exist, labeled at the end. In kube-system, whose
// creates do not call the webhook, the backfill labels them, and the webhook keeps the label on at each update.
func TestLabelModeKeepsEndpointsInTheShardsView(t *testing.T) {
	c := cluster.New(t, cluster.Options{FakeNodes: 1})
	ctx := context.Background()
	cs := c.Clientset()
	base, ca := startWebhookServer(t, map[string]admission.Handler{labels.Path: labels.Handler{}})
	rules := labels.WebhookRules([]meshv1alpha1.ShardingConfig{{Spec: meshv1alpha1.ShardingConfigSpec{
		FilterMode: meshv1alpha1.FilterModeLabel, Resources: []meshv1alpha1.GroupResource{{Resource: "configmaps"},
			{Resource: "endpoints"}, {Group: "discovery.k8s.io", Resource: "endpointslices"}}}}})
	whc := labels.MutatingWebhookConfiguration("fedmesh-labels",
		admissionregistrationv1.WebhookClientConfig{URL: ptr.To(base + labels.Path), CABundle: ca}, rules)
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, whc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createNamespaces(t, cs, "shop")
	eventually(t, 30*time.Second, "webhook registered", func() (bool, error) {
		cm := createConfigMap(t, cs, "shop", "", nil)
		return bucketLabeled(cm), cs.CoreV1().ConfigMaps("shop").Delete(ctx, cm.Name, metav1.DeleteOptions{})
	})
	startBackfill(t, c, schema.GroupVersionResource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"},
		schema.GroupVersionResource{Version: "v1", Resource: "endpoints"})

	// Every change of kube-system's EndpointSlice of the Service, from before it is created: once the backfill has
	// labeled it (the webhook is not called for creates there), no write of its controller takes the label off.
	system, err := cs.DiscoveryV1().EndpointSlices("kube-system").Watch(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=web"})
	if err != nil {
		t.Fatal(err)
	}
	defer system.Stop()
	systemUnlabeled := make(chan string, 1)
	go func() {
		labeled := false
		for ev := range system.ResultChan() {
			es, ok := ev.Object.(*discoveryv1.EndpointSlice)
			if !ok {
				continue
			}
			switch has := es.Labels[shard.BucketLabel] != ""; {
			case has:
				labeled = true
			case labeled && ev.Type != watch.Deleted:
				select {
				case systemUnlabeled <- fmt.Sprintf("%s %s labels=%v", ev.Type, es.Name, es.Labels):
				default:
				}
			}
		}
	}()
	for _, ns := range []string{"shop", "kube-system"} {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
				Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
		if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	bucket := metav1.ListOptions{LabelSelector: shard.BucketLabel + "=" + shard.BucketLabelValue("shop")}
	eventually(t, 30*time.Second, "the Service's EndpointSlice and Endpoints, labeled", func() (bool, error) {
		s, err := cs.DiscoveryV1().EndpointSlices("shop").List(ctx, bucket)
		if err != nil || len(s.Items) != 1 {
			return false, fmt.Errorf("slices: %v", err)
		}
		e, err := cs.CoreV1().Endpoints("shop").List(ctx, bucket)
		if err != nil || len(e.Items) != 1 {
			return false, fmt.Errorf("endpoints: %v", err)
		}
		return true, nil
	})

	// The shard's watches, as its proxy asks for them in label mode.
	sliceWatch, err := cs.DiscoveryV1().EndpointSlices("shop").Watch(ctx, bucket)
	if err != nil {
		t.Fatal(err)
	}
	endpointsWatch, err := cs.CoreV1().Endpoints("shop").Watch(ctx, bucket)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	deleted := map[string]int{}
	events := 0 // of both watches
	var wg sync.WaitGroup
	for kind, w := range map[string]watch.Interface{"EndpointSlice": sliceWatch, "Endpoints": endpointsWatch} {
		wg.Go(func() {
			for ev := range w.ResultChan() {
				obj, ok := ev.Object.(metav1.Object)
				if !ok {
					continue
				}
				mu.Lock()
				events++
				if ev.Type == watch.Deleted {
					t.Logf("%s %s DELETED from the shard's view, labels %v", kind, obj.GetName(), obj.GetLabels())
					deleted[kind]++
				}
				mu.Unlock()
			}
		})
	}
	eventCount := func() int {
		mu.Lock()
		defer mu.Unlock()
		return events
	}

	// Backends come up, one at a time: the endpoints change, and the controllers rewrite the objects.
	const backends = 3
	for i := range backends {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d", i), Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web:v1"}},
				Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}}}
		for _, ns := range []string{"shop", "kube-system"} {
			if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(4 * time.Second)
	}
	eventually(t, 60*time.Second, "every backend in the shard's EndpointSlice and Endpoints", func() (bool, error) {
		s, err := cs.DiscoveryV1().EndpointSlices("shop").List(ctx, bucket)
		if err != nil || len(s.Items) != 1 || len(s.Items[0].Endpoints) != backends {
			return false, fmt.Errorf("slices %v: %d labeled", err, len(s.Items))
		}
		e, err := cs.CoreV1().Endpoints("shop").List(ctx, bucket)
		if err != nil || len(e.Items) != 1 || len(e.Items[0].Subsets) != 1 || len(e.Items[0].Subsets[0].Addresses) != backends {
			return false, fmt.Errorf("endpoints %v: %d labeled", err, len(e.Items))
		}
		return true, nil
	})
	// Once every backend is in, nothing changes: a write loop between the controllers and the label would go on.
	settled := eventCount()
	time.Sleep(5 * time.Second)
	sliceWatch.Stop()
	endpointsWatch.Stop()
	wg.Wait()
	if len(deleted) > 0 {
		t.Errorf("the shard saw objects that still exist DELETED (by kind): %v", deleted)
	}
	if n := events - settled; n > 0 {
		t.Errorf("the shard saw %d more events of the EndpointSlice and Endpoints after the last backend was in", n)
	}
	select {
	case ev := <-systemUnlabeled:
		t.Errorf("kube-system's EndpointSlice lost its bucket label after the backfill labeled it: %s", ev)
	default:
	}
	system.Stop()
	list, err := cs.DiscoveryV1().EndpointSlices("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=web"})
	if err != nil {
		t.Fatal(err)
	}
	for _, es := range list.Items {
		if es.Labels[shard.BucketLabel] != shard.BucketLabelValue("kube-system") {
			t.Errorf("kube-system/%s labels %v, want %s=%s", es.Name, es.Labels, shard.BucketLabel, shard.BucketLabelValue("kube-system"))
		}
	}
}
