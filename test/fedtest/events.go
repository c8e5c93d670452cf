package fedtest

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/fedmesh/fedmesh/pkg/eventrecord"
)

// Events is an event recorder (k8s.io/client-go/tools/record.EventRecorder) that keeps what it is told, as
// "name: type reason message", for a test to look through.
type Events struct {
	mu     sync.Mutex
	events []string
}

// Event records one event about object.
func (e *Events) Event(object runtime.Object, eventtype, reason, message string) {
	name := ""
	if o, ok := object.(metav1.Object); ok {
		name = o.GetName()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, name+": "+eventtype+" "+reason+" "+message)
}

// Eventf records one event about object.
func (e *Events) Eventf(object runtime.Object, eventtype, reason, format string, args ...any) {
	e.Event(object, eventtype, reason, fmt.Sprintf(format, args...))
}

// AnnotatedEventf records one event about object; the annotations are not kept.
func (e *Events) AnnotatedEventf(object runtime.Object, _ map[string]string, eventtype, reason, format string, args ...any) {
	e.Eventf(object, eventtype, reason, format, args...)
}

// Recorder is an event recorder from component writing to mgr's API server (package eventrecord), for a test
// that reads the events back from there. It stops after mgr (when StartManager calls it in its setup).
func Recorder(t testing.TB, mgr ctrl.Manager, component string) record.EventRecorder {
	t.Helper()
	events, err := eventrecord.New(mgr.GetConfig(), mgr.GetHTTPClient(), mgr.GetScheme())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(events.Shutdown)
	return events.Recorder(component)
}

// All is every event recorded so far.
func (e *Events) All() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.events)
}

// Find is the first event of reason about the object named name ("" for any) whose message contains text, or "".
func (e *Events) Find(name, reason, text string) string {
	for _, ev := range e.All() {
		about, rest, _ := strings.Cut(ev, ": ")
		if (name == "" || about == name) && strings.Contains(rest, " "+reason+" ") && strings.Contains(rest, text) {
			return ev
		}
	}
	return ""
}
