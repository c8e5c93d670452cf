package eventrecord

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Broadcaster sends the events of one process's recorders to its API server. It is a manager.Runnable: added to
// the manager, it stops with it, so its goroutines do not outlive it.
type Broadcaster struct {
	broadcaster record.EventBroadcaster
	scheme      *runtime.Scheme
}

// New starts a broadcaster writing to the API server at cfg; scheme names the kinds of the objects events are
// about.
func New(cfg *rest.Config, scheme *runtime.Scheme) (*Broadcaster, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	b := record.NewBroadcaster(record.WithCorrelatorOptions(record.CorrelatorOptions{SpamKeyFunc: spamKey}))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	return &Broadcaster{broadcaster: b, scheme: scheme}, nil
}

// ForManager is a recorder from component writing to mgr's API server through a broadcaster that stops with mgr.
func ForManager(mgr manager.Manager, component string) (record.EventRecorder, error) {
	b, err := New(mgr.GetConfig(), mgr.GetScheme())
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(b); err != nil {
		return nil, err
	}
	return b.Recorder(component), nil
}

// Recorder records events from component (the events' source, kubectl's FROM column).
func (b *Broadcaster) Recorder(component string) record.EventRecorder {
	return b.broadcaster.NewRecorder(b.scheme, corev1.EventSource{Component: component})
}

// Start waits for ctx to end and then shuts the broadcaster down.
func (b *Broadcaster) Start(ctx context.Context) error {
	<-ctx.Done()
	b.broadcaster.Shutdown()
	return nil
}

// NeedLeaderElection is false: every replica records events, leader or not, and must stop its broadcaster.
func (b *Broadcaster) NeedLeaderElection() bool { return false }

// spamKey is the record package's rate-limiting key (one token bucket per source, object and type) with the
// reason added, so that one chatty reason on an object does not silence its others.
func spamKey(e *corev1.Event) string {
	return strings.Join([]string{
		e.Source.Component, e.Source.Host,
		e.InvolvedObject.Kind, e.InvolvedObject.Namespace, e.InvolvedObject.Name, string(e.InvolvedObject.UID),
		e.InvolvedObject.APIVersion, e.Type, e.Reason,
	}, "\x00")
}
