package cachewait

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// laggingReader finds the object from its third read on, as a cache that sees a create a little late.
type laggingReader struct{ reads atomic.Int32 }

func (r *laggingReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if r.reads.Add(1) < 3 {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, key.Name)
	}
	obj.SetName(key.Name)
	return nil
}

func (r *laggingReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return nil
}

func TestCreated(t *testing.T) {
	t.Run("the cache catches up", func(t *testing.T) {
		r := &laggingReader{}
		var cm corev1.ConfigMap
		Created(context.Background(), r, client.ObjectKey{Namespace: "ns", Name: "made"}, &cm)
		if cm.Name != "made" || r.reads.Load() != 3 {
			t.Errorf("got %q after %d reads, want the object on the third", cm.Name, r.reads.Load())
		}
	})
	t.Run("the context ends the wait", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		start := time.Now()
		Created(ctx, neverReader{}, client.ObjectKey{Name: "never"}, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{}})
		if waited := time.Since(start); waited >= Limit {
			t.Errorf("waited %s, want the context's 20ms, not Limit", waited)
		}
	})
}

// TestShows waits for a condition on the cached copy: a status write the cache shows on the third read.
func TestShows(t *testing.T) {
	r := &laggingReader{}
	var cm corev1.ConfigMap
	Shows(context.Background(), staleThenFresh{r}, client.ObjectKey{Namespace: "ns", Name: "web"}, &cm, func(o client.Object) bool {
		return o.GetLabels()["written"] == "yes"
	})
	if cm.Labels["written"] != "yes" || r.reads.Load() != 3 {
		t.Errorf("got labels %v after %d reads, want the written copy on the third", cm.Labels, r.reads.Load())
	}
}

// staleThenFresh holds the object from the first read, and the write to it from the third on.
type staleThenFresh struct{ *laggingReader }

func (r staleThenFresh) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	obj.SetName(key.Name)
	if r.reads.Add(1) >= 3 {
		obj.SetLabels(map[string]string{"written": "yes"})
	}
	return nil
}

type neverReader struct{}

func (neverReader) Get(_ context.Context, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, key.Name)
}

func (neverReader) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }
