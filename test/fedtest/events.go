package fedtest

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Events is an event recorder (the Eventf of k8s.io/client-go/tools/events.EventRecorder) that keeps what it is
// told, as "name: type reason message", for a test to look through.
type Events struct {
	mu     sync.Mutex
	events []string
}

// Eventf records one event about regarding.
func (e *Events) Eventf(regarding, _ runtime.Object, eventtype, reason, _, format string, args ...any) {
	name := ""
	if o, ok := regarding.(metav1.Object); ok {
		name = o.GetName()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, name+": "+eventtype+" "+reason+" "+fmt.Sprintf(format, args...))
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
