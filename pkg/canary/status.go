package canary

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/shard"
)

// Status is s as the API's CanaryStatus, which the manager persists so that a restarted manager can Restore it.
// The API has fewer phases: Pending is the empty phase, Analyzing is Progressing with a StepStartTime (the API's
// "when the current step's handover finished"), and Failed is RolledBack (the message says why). CurrentStep counts
// the API's spec.steps: -1 while only named namespaces have moved. Namespaces (a count of namespaces) is left to
// the manager, which knows the namespaces that exist.
func (p Plan) Status(s State) v1alpha1.CanaryStatus {
	st := v1alpha1.CanaryStatus{Message: s.Message}
	switch s.Phase {
	case "", Pending:
		return st
	case Progressing, Analyzing:
		st.Phase = v1alpha1.CanaryProgressing
	case Paused:
		st.Phase = v1alpha1.CanaryPaused
	case Promoted:
		st.Phase = v1alpha1.CanaryPromoted
	case RolledBack, Failed:
		st.Phase = v1alpha1.CanaryRolledBack
	}
	st.CurrentStep = int32(max(s.Step-p.namedSteps(), -1))
	if !s.StepStart.IsZero() {
		st.StepStartTime = &metav1.Time{Time: s.StepStart}
	}
	return st
}

// Restore is the State that a persisted CanaryStatus describes. canary is what the canary shard is to own in the
// published assignment (its ranges in ShardingConfig status), which the CanaryStatus does not hold. A nil status is
// Pending. The API stores StepStartTime to the second, and Failed comes back as RolledBack; Step treats both alike.
func (p Plan) Restore(st *v1alpha1.CanaryStatus, canary shard.Set) State {
	if st == nil || st.Phase == "" {
		return State{Phase: Pending, Step: -1}
	}
	s := State{Step: max(int(st.CurrentStep)+p.namedSteps(), 0), Canary: canary, Message: st.Message}
	if st.StepStartTime != nil {
		s.StepStart = st.StepStartTime.Time
	}
	switch st.Phase {
	case v1alpha1.CanaryProgressing:
		s.Phase = Progressing
		if !s.StepStart.IsZero() {
			s.Phase = Analyzing
		}
	case v1alpha1.CanaryPaused:
		s.Phase = Paused
	case v1alpha1.CanaryPromoted:
		s.Phase = Promoted
	default:
		s.Phase = RolledBack
	}
	if s.Phase.Final() {
		s.StepStart = time.Time{}
	}
	return s
}

// namedSteps is how many of p's steps are named steps; FromSpec makes one at most.
func (p Plan) namedSteps() int {
	n := 0
	for _, s := range p.Steps {
		if s.Named() {
			n++
		}
	}
	return n
}
