package eventrecord

import (
	"hash/fnv"
	"net/http"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
)

// sinks is how many broadcasters write at once. One broadcaster writes its events one at a time, so a burst of
// new templates (three events each) would queue behind the API server's round trip; each object's events all go
// through one of them, so that they still meet in one correlator.
const sinks = 8

// correlation folds and limits events per object and reason. The limit is client-go's burst (25) refilled at
// one event a second rather than its one per five minutes, so that a busy reason (a handover's steps, a
// rollout's turns) keeps telling its news while a runaway loop still cannot flood the API server.
var correlation = record.CorrelatorOptions{BurstSize: 25, QPS: 1, SpamKeyFunc: spamKey}

// Broadcaster sends the events of one process's recorders to its API server. Shut it down after the manager
// has stopped, so that controllers finishing their last passes still record.
type Broadcaster struct {
	sinks  []record.EventBroadcaster
	scheme *runtime.Scheme
	host   string
}

// New starts a broadcaster writing to the API server at cfg through httpClient (the manager's, to share its
// connections); scheme names the kinds of the objects events are about.
func New(cfg *rest.Config, httpClient *http.Client, scheme *runtime.Scheme) (*Broadcaster, error) {
	cs, err := kubernetes.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	// The pod's name: which replica (which shard) recorded the event.
	host, _ := os.Hostname()
	b := &Broadcaster{scheme: scheme, host: host}
	for range sinks {
		s := record.NewBroadcaster(record.WithCorrelatorOptions(correlation))
		s.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
		b.sinks = append(b.sinks, s)
	}
	return b, nil
}

// Recorder records events from component (the events' source: the From column of kubectl describe).
func (b *Broadcaster) Recorder(component string) record.EventRecorder {
	r := make(recorder, len(b.sinks))
	for i, s := range b.sinks {
		r[i] = s.NewRecorder(b.scheme, corev1.EventSource{Component: component, Host: b.host})
	}
	return r
}

// Shutdown stops the broadcaster; events recorded afterwards are dropped.
func (b *Broadcaster) Shutdown() {
	for _, s := range b.sinks {
		s.Shutdown()
	}
}

// recorder hands each event to the sink of its object.
type recorder []record.EventRecorder

func (r recorder) Event(object runtime.Object, eventtype, reason, message string) {
	r.of(object).Event(object, eventtype, reason, message)
}

func (r recorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	r.of(object).Eventf(object, eventtype, reason, messageFmt, args...)
}

func (r recorder) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	r.of(object).AnnotatedEventf(object, annotations, eventtype, reason, messageFmt, args...)
}

func (r recorder) of(object runtime.Object) record.EventRecorder {
	m, err := meta.Accessor(object)
	if err != nil {
		return r[0] // the recorder reports what it cannot refer to
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(m.GetNamespace() + "/" + m.GetName()))
	return r[h.Sum32()%uint32(len(r))]
}

// spamKey is the record package's rate-limiting key (one token bucket per source, object and type) with the
// reason added, so that one chatty reason on an object does not silence its others.
func spamKey(e *corev1.Event) string {
	return strings.Join([]string{
		e.Source.Component, e.Source.Host,
		e.InvolvedObject.Kind, e.InvolvedObject.Namespace, e.InvolvedObject.Name, string(e.InvolvedObject.UID),
		e.InvolvedObject.APIVersion, e.Type, e.Reason,
	}, "\x00")
}
