package detector

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"

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
