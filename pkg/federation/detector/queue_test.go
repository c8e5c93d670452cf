package detector

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/templates"
)

// TestTemplateQueueHoldsATemplateOnce: keys naming one template in two versions (an informer's and a binding's)
// are queued as one, so two workers never reconcile the same template at the same time.
func TestTemplateQueueHoldsATemplateOnce(t *testing.T) {
	watched := schema.GroupVersionKind{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"}
	canonical := func(k templates.Key) templates.Key {
		if k.GVK.GroupKind() == watched.GroupKind() {
			k.GVK = watched
		}
		return k
	}
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[templates.Key]())
	defer queue.ShutDown()
	q := &templateQueue{canonical: canonical}
	web := types.NamespacedName{Namespace: "a", Name: "web"}
	q.add(templates.Key{GVK: watched.GroupVersion().WithKind(watched.Kind), NamespacedName: web})
	if err := q.Start(context.Background(), queue); err != nil {
		t.Fatal(err)
	}
	q.add(templates.Key{GVK: schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: watched.Kind}, NamespacedName: web})
	if n := queue.Len(); n != 1 {
		t.Fatalf("queue holds %d keys of one template, want 1", n)
	}
	if k, _ := queue.Get(); k.GVK != watched {
		t.Errorf("queued %v, want it in the watched version %v", k.GVK, watched)
	}
}

// TestBindingCreatesQueueTemplatesNotShown: a binding that appears after the start queues its template when the
// informers do not show it (a shard given a namespace, whose template was deleted meanwhile); the detector's own
// bindings, of templates the informers show, queue nothing. Every binding of the initial list, and every one in the
// system namespace, queues its template.
func TestBindingCreatesQueueTemplatesNotShown(t *testing.T) {
	web := &unstructured.Unstructured{}
	web.SetGroupVersionKind(deploymentKind)
	web.SetNamespace("a")
	web.SetName("web")
	resource := deploymentKind.GroupVersion().WithResource("deployments")
	d := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{resource: "DeploymentList"}, web)
	cache := templates.New(d, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = cache.Start(ctx) }()
	cache.Sync(map[schema.GroupKind]*meta.RESTMapping{deploymentKind.GroupKind(): {
		GroupVersionKind: deploymentKind, Scope: meta.RESTScopeNamespace, Resource: resource}})
	webKey := templates.KeyOf(web)
	for deadline := time.Now().Add(10 * time.Second); !cache.Holds(webKey); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the informer never showed the template")
		}
	}
	r := &Reconciler{Templates: cache}

	binding := func(namespace, kind, templateNamespace, name string) *workv1alpha1.ResourceBinding {
		return &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Spec: workv1alpha1.ResourceBindingSpec{Resource: workv1alpha1.ObjectReference{
				APIVersion: "apps/v1", Kind: kind, Namespace: templateNamespace, Name: name}}}
	}
	for _, tc := range []struct {
		name          string
		binding       *workv1alpha1.ResourceBinding
		inInitialList bool
		queues        bool
	}{
		{"a template the informer shows", binding("a", "Deployment", "a", "web"), false, false},
		{"a template the informer does not show", binding("a", "Deployment", "a", "gone"), false, true},
		{"a kind no informer runs for", binding("a", "StatefulSet", "a", "web"), false, true},
		{"in the initial list", binding("a", "Deployment", "a", "web"), true, true},
		{"in the system namespace", binding(names.SystemNamespace, "Deployment", "a", "web"), false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := r.queuesOnCreate(event.CreateEvent{Object: tc.binding, IsInInitialList: tc.inInitialList})
			if got != tc.queues {
				t.Errorf("queues its template: %v, want %v", got, tc.queues)
			}
		})
	}
}
