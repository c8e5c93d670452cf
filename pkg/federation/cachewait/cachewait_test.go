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
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// laggingReader is a cache that shows an object, or the write to it, from its third read on; after each read
// that does not show it yet, it calls stale (where a test makes its informer deliver events).
type laggingReader struct {
	reads atomic.Int32
	// update: the object exists from the first read and gains the label written=yes on the third.
	update bool
	stale  func(key client.ObjectKey)
}

func (r *laggingReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	n := r.reads.Add(1)
	defer func() {
		if n < 3 && r.stale != nil {
			r.stale(key)
		}
	}()
	if n < 3 && !r.update {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, key.Name)
	}
	obj.SetName(key.Name)
	if n >= 3 {
		obj.SetLabels(map[string]string{"written": "yes"})
	}
	return nil
}

func (r *laggingReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return nil
}

func written(o client.Object) bool { return o.GetLabels()["written"] == "yes" }

func named(key client.ObjectKey) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
}

func TestWokenByTheInformer(t *testing.T) {
	key := client.ObjectKey{Namespace: "ns", Name: "web"}
	for _, tc := range []struct {
		name    string
		update  bool
		deliver func(inf *informertest.FakeInformers, key client.ObjectKey)
		// wantReads is how many times the cache was read: 3 when each event woke the wait, 1 when none did.
		wantReads int32
	}{
		{name: "created: each add wakes the wait", deliver: func(inf *informertest.FakeInformers, key client.ObjectKey) {
			fi, _ := inf.FakeInformerFor(context.Background(), &corev1.ConfigMap{})
			fi.Add(named(key))
		}, wantReads: 3},
		{name: "written: each update wakes the wait", update: true, deliver: func(inf *informertest.FakeInformers, key client.ObjectKey) {
			fi, _ := inf.FakeInformerFor(context.Background(), &corev1.ConfigMap{})
			fi.Update(named(key), named(key))
		}, wantReads: 3},
		{name: "events of other objects and kinds do not", deliver: func(inf *informertest.FakeInformers, key client.ObjectKey) {
			fi, _ := inf.FakeInformerFor(context.Background(), &corev1.ConfigMap{})
			fi.Add(named(client.ObjectKey{Namespace: key.Namespace, Name: "other"}))
			secrets, _ := inf.FakeInformerFor(context.Background(), &corev1.Secret{})
			secrets.Add(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}})
		}, wantReads: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			informers := &informertest.FakeInformers{}
			w, err := For(ctx, informers, &corev1.ConfigMap{}, &corev1.Secret{})
			if err != nil {
				t.Fatal(err)
			}
			// Never recheck: only an event can make the wait read the cache again.
			w.recheck = time.Hour
			r := &laggingReader{update: tc.update, stale: func(key client.ObjectKey) { tc.deliver(informers, key) }}
			var cm corev1.ConfigMap
			w.Shows(ctx, r, key, &cm, written)
			if got := r.reads.Load(); got != tc.wantReads {
				t.Errorf("the cache was read %d times, want %d", got, tc.wantReads)
			}
			if tc.wantReads == 3 && !written(&cm) {
				t.Errorf("got %+v, want the written copy", cm.ObjectMeta)
			}
			if n := len(w.waiting); n != 0 {
				t.Errorf("%d keys still listened to after the wait", n)
			}
		})
	}
}

func TestNilWaiterRechecks(t *testing.T) {
	var w *Waiter
	r := &laggingReader{}
	var cm corev1.ConfigMap
	w.Created(context.Background(), r, client.ObjectKey{Namespace: "ns", Name: "made"}, &cm)
	if cm.Name != "made" || r.reads.Load() != 3 {
		t.Errorf("got %q after %d reads, want the object on the third", cm.Name, r.reads.Load())
	}
}

func TestContextEndsTheWait(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	(&Waiter{}).Created(ctx, neverReader{}, client.ObjectKey{Name: "never"}, &corev1.ConfigMap{})
	if waited := time.Since(start); waited >= Limit {
		t.Errorf("waited %s, want the context's 20ms, not Limit", waited)
	}
}

func TestCreatedAllWaitsOneLimit(t *testing.T) {
	keys := []client.ObjectKey{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	start := time.Now()
	(&Waiter{}).CreatedAll(context.Background(), neverReader{}, keys, func() client.Object { return &corev1.ConfigMap{} })
	if waited := time.Since(start); waited >= 2*Limit {
		t.Errorf("waited %s for three objects the cache never shows, want one Limit (%s) in all", waited, Limit)
	}

	// The cache shows the first on its third read, and by then the second too.
	r := &laggingReader{}
	(&Waiter{}).CreatedAll(context.Background(), r, keys[:2], func() client.Object { return &corev1.ConfigMap{} })
	if got := r.reads.Load(); got != 4 {
		t.Errorf("read the cache %d times, want 3 for the first object (shown on the third read) and 1 for the next", got)
	}
}

type neverReader struct{}

func (neverReader) Get(_ context.Context, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, key.Name)
}

func (neverReader) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

// countingReader never shows the object and counts how often it was asked.
type countingReader struct {
	neverReader
	reads atomic.Int32
}

func (r *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.reads.Add(1)
	return r.neverReader.Get(ctx, key, obj, opts...)
}

func TestRechecksBackOff(t *testing.T) {
	r := &countingReader{}
	(&Waiter{}).Created(context.Background(), r, client.ObjectKey{Name: "never"}, &corev1.ConfigMap{})
	// Over Limit (3s), reads at 0, 50, 150, 350, 750 and 1550ms: a fixed 50ms would have read 60 times.
	if got := r.reads.Load(); got > 7 || got < 3 {
		t.Errorf("the cache was read %d times in a wait that nothing ended, want 3 to 7", got)
	}
}
