package eventrecord

import (
	"hash/fnv"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

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
// rollout's turns) keeps telling its news while a runaway loop still cannot flood the API server. Each sink sees
// its share of the objects, so its caches are its share of client-go's 4096 entries.
var correlation = record.CorrelatorOptions{BurstSize: 25, QPS: 1, SpamKeyFunc: spamKey, LRUCacheSize: 4096 / sinks}

// Shutdown waits for the sinks to have been idle for drainIdle, at most drainLimit: client-go's Shutdown drops
// what is still queued.
const (
	drainIdle  = 200 * time.Millisecond
	drainLimit = 5 * time.Second
)

// Broadcaster sends the events of one process's recorders to its API server. Shut it down after the manager
// has stopped, so that what its controllers record in their last passes is still written.
type Broadcaster struct {
	sinks    []record.EventBroadcaster
	scheme   *runtime.Scheme
	host     string
	activity *activity
	stopped  sync.Once
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
	b := &Broadcaster{scheme: scheme, host: host, activity: &activity{}}
	for range sinks {
		s := record.NewBroadcaster(record.WithCorrelatorOptions(correlation))
		s.StartRecordingToSink(sink{EventSink: &typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")}, activity: b.activity})
		b.sinks = append(b.sinks, s)
	}
	return b, nil
}

// Recorder records events from component (the events' source: the From column of kubectl describe).
func (b *Broadcaster) Recorder(component string) record.EventRecorder {
	r := recorder{activity: b.activity}
	for _, s := range b.sinks {
		r.sinks = append(r.sinks, s.NewRecorder(b.scheme, corev1.EventSource{Component: component, Host: b.host}))
	}
	return r
}

// Shutdown writes what is queued (waiting at most drainLimit) and stops the broadcaster; events recorded
// afterwards are dropped. Calls after the first do nothing.
func (b *Broadcaster) Shutdown() {
	b.stopped.Do(func() {
		for deadline := time.Now().Add(drainLimit); time.Now().Before(deadline) && !b.activity.idleFor(drainIdle); {
			time.Sleep(drainIdle / 4)
		}
		for _, s := range b.sinks {
			s.Shutdown()
		}
	})
}

// activity is when an event was last recorded or written, and how many writes are under way.
type activity struct {
	mu       sync.Mutex
	inflight int
	last     time.Time
}

func (a *activity) touch(delta int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.inflight += delta
	a.last = time.Now()
}

func (a *activity) idleFor(d time.Duration) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.inflight == 0 && time.Since(a.last) >= d
}

// sink is the API server's Events, each write noted in activity.
type sink struct {
	record.EventSink
	activity *activity
}

func (s sink) Create(e *corev1.Event) (*corev1.Event, error) {
	s.activity.touch(1)
	defer s.activity.touch(-1)
	return s.EventSink.Create(e)
}

func (s sink) Update(e *corev1.Event) (*corev1.Event, error) {
	s.activity.touch(1)
	defer s.activity.touch(-1)
	return s.EventSink.Update(e)
}

func (s sink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	s.activity.touch(1)
	defer s.activity.touch(-1)
	return s.EventSink.Patch(e, data)
}

// recorder hands each event to the sink of its object, noting it in activity.
type recorder struct {
	sinks    []record.EventRecorder
	activity *activity
}

func (r recorder) Event(object runtime.Object, eventtype, reason, message string) {
	r.of(object).Event(object, eventtype, reason, message)
}

func (r recorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	r.of(object).Eventf(object, eventtype, reason, messageFmt, args...)
}

func (r recorder) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	r.of(object).AnnotatedEventf(object, annotations, eventtype, reason, messageFmt, args...)
}

// of is the recorder of object's sink, chosen by its namespace and name, so that all its events meet in one
// correlator.
func (r recorder) of(object runtime.Object) record.EventRecorder {
	r.activity.touch(0)
	var key string
	switch o := object.(type) {
	case *corev1.ObjectReference:
		key = o.Namespace + "/" + o.Name
	default:
		m, err := meta.Accessor(object)
		if err != nil {
			return r.sinks[0] // the record package reports what it cannot refer to
		}
		key = m.GetNamespace() + "/" + m.GetName()
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return r.sinks[h.Sum32()%uint32(len(r.sinks))]
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
