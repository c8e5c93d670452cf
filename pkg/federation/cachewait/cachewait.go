package cachewait

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Limit is how long a wait lasts at most. Under load a shard's cache lags a second or more behind the shard's
// own writes, and a wait that gives up before it catches up costs a write made again (a status applied twice, a
// create refused as existing) on the API server, the busiest process then; a waiting worker costs no CPU. In the
// small federation benchmark at 4 shards, 1 s left 0.17-0.3 refused Work creates and 0.15-0.28 repeated scheduler
// status applies per template, 3 s 0.04-0.09 and 0.02-0.11.
const Limit = 3 * time.Second

// StaleRecheck is how soon a pass that found its own earlier create missing from the cache (a wait gave up, and the
// API server answered AlreadyExists) looks again. The cache lags that far only under heavy load, when each pass
// that finds it still lagging costs the API server another refused create.
const StaleRecheck = time.Second

// recheck is how soon a wait first reads the cache again when no event has woken it, doubling after each such
// read: a safety net, not the way a wait normally ends. When the cache lags most, under load, each read is a copy
// of the object the cache would deliver anyway.
const recheck = 50 * time.Millisecond

// Waiter waits for a cache to show an object, woken by the cache's informer delivering that object rather than
// by polling: a poll every few milliseconds copies the object out of the cache each time, and under load, when
// the cache lags most, that is most of a stage's waiting. The zero Waiter (and a nil one) only rechecks.
type Waiter struct {
	mu      sync.Mutex
	waiting map[waitKey][]chan struct{}
	recheck time.Duration
}

// waitKey names an object of one kind: the Go type of the informer's objects, and the object's key.
type waitKey struct {
	kind reflect.Type
	client.ObjectKey
}

// For returns a Waiter woken by the informers of objs' kinds (typed objects) in informers, a manager's cache.
func For(ctx context.Context, informers cache.Informers, objs ...client.Object) (*Waiter, error) {
	w := &Waiter{}
	for _, obj := range objs {
		inf, err := informers.GetInformer(ctx, obj)
		if err != nil {
			return nil, fmt.Errorf("informer of %T: %w", obj, err)
		}
		kind := reflect.TypeOf(obj)
		_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { w.Wake(kind, o) },
			UpdateFunc: func(_, o any) { w.Wake(kind, o) },
		})
		if err != nil {
			return nil, fmt.Errorf("informer of %T: %w", obj, err)
		}
	}
	return w, nil
}

// Wake ends the waits for o, an object of kind that the cache now holds as it is.
func (w *Waiter) Wake(kind reflect.Type, o any) {
	m, ok := o.(metav1.Object)
	if !ok || w == nil {
		return
	}
	k := waitKey{kind, client.ObjectKey{Namespace: m.GetNamespace(), Name: m.GetName()}}
	w.mu.Lock()
	woken := w.waiting[k]
	delete(w.waiting, k)
	w.mu.Unlock()
	for _, ch := range woken {
		close(ch)
	}
}

// Created waits, at most Limit, until reader (the cache) holds the object at key; obj receives it. Giving up is
// harmless: a pass that misses the object meets AlreadyExists and looks again later.
func (w *Waiter) Created(ctx context.Context, reader client.Reader, key client.ObjectKey, obj client.Object) {
	w.Shows(ctx, reader, key, obj, func(client.Object) bool { return true })
}

// CreatedAll waits, at most Limit in all, until reader (the cache) holds every object at keys, each of newObj's
// kind: objects created one after another are waited for together, so that the cache's lag is waited out once
// rather than once per object. Giving up is as harmless as in Created.
func (w *Waiter) CreatedAll(ctx context.Context, reader client.Reader, keys []client.ObjectKey, newObj func() client.Object) {
	ctx, cancel := context.WithTimeout(ctx, Limit)
	defer cancel()
	for _, key := range keys {
		if ctx.Err() != nil {
			return
		}
		w.Created(ctx, reader, key, newObj())
	}
}

// Shows waits, at most Limit, until reader (the cache) holds the object at key and done is true of it; obj
// receives it. Giving up is harmless: a pass that reads the older copy writes again what was written.
func (w *Waiter) Shows(ctx context.Context, reader client.Reader, key client.ObjectKey, obj client.Object, done func(client.Object) bool) {
	ctx, cancel := context.WithTimeout(ctx, Limit)
	defer cancel()
	k := waitKey{reflect.TypeOf(obj), key}
	every := recheck
	if w != nil && w.recheck > 0 {
		every = w.recheck
	}
	timer := time.NewTimer(every)
	defer timer.Stop()
	for {
		// Listen before reading, so that an event between the read and the wait is not missed.
		woken := w.listen(k)
		if reader.Get(ctx, key, obj) == nil && done(obj) {
			w.forget(k, woken)
			return
		}
		select {
		case <-woken:
			continue
		case <-timer.C:
			every *= 2
			timer.Reset(every)
		case <-ctx.Done():
		}
		w.forget(k, woken)
		if ctx.Err() != nil {
			return
		}
	}
}

// listen returns a channel closed when k's next event arrives; nil (never closed) on a nil Waiter.
func (w *Waiter) listen(k waitKey) chan struct{} {
	if w == nil {
		return nil
	}
	ch := make(chan struct{})
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.waiting == nil {
		w.waiting = map[waitKey][]chan struct{}{}
	}
	w.waiting[k] = append(w.waiting[k], ch)
	return ch
}

// forget stops listening on ch for k, if no event has closed it yet.
func (w *Waiter) forget(k waitKey, ch chan struct{}) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	chans := w.waiting[k]
	for i, c := range chans {
		if c == ch {
			chans = append(chans[:i], chans[i+1:]...)
			break
		}
	}
	if len(chans) == 0 {
		delete(w.waiting, k)
	} else {
		w.waiting[k] = chans
	}
}
