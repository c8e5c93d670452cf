package status

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/fedmesh/fedmesh/pkg/federation/coalesce"
)

// wakeups turn calls from other goroutines (member informers, another stage's verdicts or outcomes) into
// reconciles of one controller, through a channel source and the coalescing handler. A call waits for room in the
// channel while the manager runs, and gives up once it stops.
type wakeups struct {
	ch      chan event.GenericEvent
	stopped chan struct{}
}

// newWakeups makes the wakeups of a controller of mgr; onStop, if any, runs when the manager stops.
func newWakeups(mgr ctrl.Manager, onStop func()) (*wakeups, error) {
	w := &wakeups{ch: make(chan event.GenericEvent, 1024), stopped: make(chan struct{})}
	err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		close(w.stopped)
		if onStop != nil {
			onStop()
		}
		return nil
	}))
	return w, err
}

// wake reconciles the object key after the coalescing delay.
func (w *wakeups) wake(key types.NamespacedName) {
	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	select {
	case w.ch <- event.GenericEvent{Object: obj}:
	case <-w.stopped:
	}
}

// source is the controller's source of the wakeups, each gathered with the others of its object within delay.
func (w *wakeups) source(delay time.Duration) source.Source {
	return source.Channel(w.ch, coalesce.Handler(delay, coalesce.Self))
}
