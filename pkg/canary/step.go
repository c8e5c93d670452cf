package canary

import (
	"fmt"
	"strings"
	"time"

	"github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/shard"
)

// Step is the rollout's next State and what to do about it, given the Plan (valid, see Validate), the last State,
// what the manager observed and the time. It is pure: the same inputs give the same outputs. It takes every
// transition the inputs allow, so that calling it again with its own State and the same Observation and time changes
// nothing and records no event.
//
// Rules, in order of precedence:
//   - Final phases stay; a Promoted canary releases its namespaces once the stable shards run its version.
//   - Action Rollback returns every namespace to the stable shards at once.
//   - Once a step's handover is done, the analysis runs on every call: an error rate, breaker trips or restarts
//     over their bounds, or canary pods not all ready once the pause is over, fail the rollout (phase Failed) and
//     return every namespace to the stable shards. This holds while Paused and while waiting to be promoted.
//     With an error-rate or breaker-trip bound, canary pods whose metrics could not be read (Unmeasured) hold the
//     rollout at its step once the pause is over, with a warning, until they can be: it never moves on unmeasured.
//   - A plan edited under the rollout so that the State's canary set lacks its step's set hands that step over
//     again (e.g. named namespaces removed, which shifts the step indexes).
//   - Action Pause holds the rollout at its step (before the first step it stays Pending); a handover that finishes
//     while paused starts the step's analysis. Continue resumes it, with a fresh pause once the handover is done;
//     Promote resumes a step whose pause is over without a fresh one.
//   - The pause runs from StepStart, or from Observation.MeasuredSince if later (counts lost to a manager restart).
//   - A step hands over, then waits its pause; then the next step starts. After the last step the rollout waits,
//     analysing, for action Promote, or promotes itself if Plan.AutoPromote.
//   - Action Promote is approval, not a skip: set earlier, it advances like Continue and promotes once the last step
//     has passed its analysis. So a canary written with action Promote rolls out by itself, and a Promote racing a
//     failing analysis never promotes the failing version.
func Step(p Plan, s State, o Observation, now time.Time) (State, Result) {
	if s.Phase == "" || s.Phase == Pending {
		s = State{Phase: Pending, Step: -1}
	}
	if o.Action == "" {
		o.Action = v1alpha1.CanaryContinue
	}
	var events []Event
	// Each transition records an event and moves forward (there are at most a few per step), so this ends.
	for range 4*len(p.Steps) + 8 {
		next, ev, moved := transition(p, s, o, now)
		if !moved {
			break
		}
		s, events = next, append(events, ev)
	}
	return s, result(p, s, o, now, events)
}

// transition is one move of the rollout, with its event, or moved == false if the inputs allow none.
func transition(p Plan, s State, o Observation, now time.Time) (next State, ev Event, moved bool) {
	switch s.Phase {
	case Promoted:
		if o.StableRolledOut && !s.Canary.Empty() {
			s.Canary, s.Message = shard.Set{}, "the stable shards run the canary's version; its namespaces return to them"
			return s, Event{EventNormal, "Released", s.Message}, true
		}
		return s, Event{}, false
	case RolledBack, Failed:
		return s, Event{}, false
	}

	if o.Action == v1alpha1.CanaryRollback {
		return rollback(s, RolledBack, EventNormal, "RolledBack", "action Rollback")
	}

	if s.Phase != Pending && !s.Canary.ContainsSet(p.Set(s.Step)) {
		// The plan was edited under the rollout (e.g. its named namespaces removed, so that the restored step index
		// now names a later step): hand the step over and analyse it rather than pass it unseen.
		return startStep(p, s, s.Step)
	}

	if !s.StepStart.IsZero() {
		if failure := analyse(p.Analysis, o, p.pauseOver(s, o, now)); failure != "" {
			return rollback(s, Failed, EventWarning, "AnalysisFailed", p.describe(s.Step)+": "+failure)
		}
	}

	if o.Action == v1alpha1.CanaryPause {
		switch {
		case s.Phase == Pending: // nothing has moved, nothing to hold
			return s, Event{}, false
		case s.Phase == Paused && s.StepStart.IsZero() && o.Owned.Equal(s.Canary):
			// Handed over while paused: the analysis, which runs while paused, needs its window to start.
			s.StepStart = now
			s.Message = fmt.Sprintf("%s: handed over while paused; analysing", p.describe(s.Step))
			return s, Event{EventNormal, "Analyzing", s.Message}, true
		case s.Phase == Paused:
			return s, Event{}, false
		}
		s.Phase, s.Message = Paused, "action Pause holds the rollout at "+p.describe(s.Step)
		return s, Event{EventNormal, "Paused", s.Message}, true
	}

	switch s.Phase {
	case Pending:
		return startStep(p, s, 0)
	case Paused:
		if o.Action == v1alpha1.CanaryPromote && !s.StepStart.IsZero() && o.Owned.Equal(s.Canary) && p.pauseOver(s, o, now) {
			// Approval of a step analysed for its whole pause (paused or not): no second pause.
			s.Phase, s.Message = Analyzing, "resumed at "+p.describe(s.Step)+" by action Promote; its pause is over"
			return s, Event{EventNormal, "Resumed", s.Message}, true
		}
		s.Phase, s.StepStart = Progressing, time.Time{}
		if o.Owned.Equal(s.Canary) {
			s.Phase, s.StepStart = Analyzing, now
		}
		s.Message = "resumed at " + p.describe(s.Step) + "; its pause starts again"
		return s, Event{EventNormal, "Resumed", s.Message}, true
	case Progressing:
		if !o.Owned.Equal(s.Canary) {
			return s, Event{}, false
		}
		s.Phase, s.StepStart = Analyzing, now
		s.Message = fmt.Sprintf("%s: handed over; analysing for %v", p.describe(s.Step), p.pause(s.Step))
		return s, Event{EventNormal, "Analyzing", s.Message}, true
	case Analyzing:
		if !p.pauseOver(s, o, now) {
			return s, Event{}, false
		}
		if why := unmeasured(p.Analysis, o); why != "" {
			held := p.describe(s.Step) + ": " + why + "; the rollout holds"
			if s.Message == held {
				return s, Event{}, false
			}
			s.Message = held
			return s, Event{EventWarning, "AnalysisIncomplete", s.Message}, true
		}
		if s.Step+1 < len(p.Steps) {
			return startStep(p, s, s.Step+1)
		}
		if o.Action == v1alpha1.CanaryPromote {
			return promote(p, s, "action Promote")
		}
		if p.AutoPromote {
			return promote(p, s, "every step passed its analysis")
		}
		const waiting = "every step passed its analysis; waiting for action Promote"
		if s.Message == waiting {
			return s, Event{}, false
		}
		s.Message = waiting
		return s, Event{EventNormal, "AwaitingPromotion", s.Message}, true
	}
	return s, Event{}, false
}

func startStep(p Plan, s State, i int) (State, Event, bool) {
	s.Phase, s.Step, s.StepStart = Progressing, i, time.Time{}
	s.Canary = s.Canary.Union(p.Set(i)) // grows even if the plan was edited mid-rollout
	s.Message = p.describe(i) + ": handing over"
	return s, Event{EventNormal, "StepStarted", s.Message}, true
}

func promote(p Plan, s State, why string) (State, Event, bool) {
	s.Phase, s.StepStart = Promoted, time.Time{}
	s.Message = fmt.Sprintf("%s at %s: rolling the stable shards to the canary's version", why, p.describe(s.Step))
	return s, Event{EventNormal, "Promoted", s.Message}, true
}

func rollback(s State, phase Phase, typ, reason, why string) (State, Event, bool) {
	s.Phase, s.StepStart, s.Canary = phase, time.Time{}, shard.Set{}
	s.Message = why + "; every namespace returns to the stable shards"
	return s, Event{typ, reason, s.Message}, true
}

func result(p Plan, s State, o Observation, now time.Time, events []Event) Result {
	r := Result{Canary: s.Canary, Events: events, RequeueAfter: p.Interval}
	r.Promote = s.Phase == Promoted && !o.StableRolledOut
	if s.Phase.Final() && !r.Promote && s.Canary.Empty() && o.Owned.Empty() {
		r.Finished, r.RequeueAfter = true, 0
	}
	if s.Phase == Analyzing {
		if left := p.pause(s.Step) - now.Sub(windowStart(s, o)); left > 0 {
			r.RequeueAfter = min(left, p.Interval)
		}
	}
	return r
}

// pauseOver reports whether the current step (handed over, StepStart set) has been analysed for its whole pause.
func (p Plan) pauseOver(s State, o Observation, now time.Time) bool {
	return now.Sub(windowStart(s, o)) >= p.pause(s.Step)
}

// windowStart is when the step's metrics window began: StepStart, or the later Observation.MeasuredSince of a
// manager that lost the counts from before it, so that the step is judged on a full window of counts.
func windowStart(s State, o Observation) time.Time {
	if o.MeasuredSince.After(s.StepStart) {
		return o.MeasuredSince
	}
	return s.StepStart
}

// pause is step i's pause; 0 for an index outside the plan (a plan edited mid-rollout).
func (p Plan) pause(i int) time.Duration {
	if i < 0 || i >= len(p.Steps) {
		return 0
	}
	return p.Steps[i].Pause
}

// describe names step i for messages: "step 2 of 3 (30%)", "step 1 of 3 (namespaces shop, blog)".
func (p Plan) describe(i int) string {
	switch {
	case i < 0:
		return "the start"
	case i >= len(p.Steps):
		return fmt.Sprintf("step %d", i+1)
	case p.Steps[i].Named():
		return fmt.Sprintf("step %d of %d (namespaces %s)", i+1, len(p.Steps), strings.Join(p.Steps[i].Namespaces, ", "))
	}
	return fmt.Sprintf("step %d of %d (%d%%)", i+1, len(p.Steps), p.Steps[i].Percent)
}
