package canary

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fedmesh/fedmesh/pkg/internal/scripttest"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/shard"
)

// TestScripts replays testdata/*.txt with scripttest: each command is followed by what it printed ("> ...").
// Commands:
//
//	plan [namespaces=a,b] [steps=10/5m,30,...] [max-error-rate=N] [max-trips=N] [max-restarts=N] [auto-promote]
//	                 FromSpec of that spec (percent/pause per step), and a fresh rollout; prints ok or the error
//	observe [requests=N] [errors=N] [trips=N] [restarts=N] [ready=R/T] [unmeasured=N]
//	                 sets those metrics of the Observation
//	action A         the user's action (Continue, Pause, Promote, Rollback)
//	handover         every proxy acknowledged the last Result: Owned becomes the State's Canary set
//	rolled-out       the stable shards run the canary's version
//	advance D        moves the clock
//	edit [namespaces=a,b] [steps=...] [max-...=N]
//	                 the user edits the spec mid-rollout: the State goes through the old plan's Status and the new
//	                 plan's Restore, as the manager reads it back; prints the restored State
//	restart-manager  the manager restarts: the State goes through Status and Restore, and the metrics count again
//	                 from now (Observation.MeasuredSince); prints the restored State
//	step             calls Step and prints the State, the Result and the events
//
// Like the manager's, the metrics restart at 0 (and MeasuredSince is cleared) whenever StepStart changes. Every step
// also checks that Step is pure (a second call gives the same answer), that its State is a fixpoint (calling again
// with it records nothing and changes nothing), and that the canary's set only grows until the rollout ends.
func TestScripts(t *testing.T) {
	scripttest.Run(t, func(t *testing.T, file string) scripttest.Runner {
		s := &script{t: t, now: scriptStart}
		return func(line int, cmd string) []string { return s.run(file, line, cmd) }
	})
}

var scriptStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type script struct {
	t     *testing.T
	plan  Plan
	state State
	obs   Observation
	now   time.Time
}

func (s *script) run(file string, line int, cmd string) []string {
	fields := strings.Fields(cmd)
	args := map[string]string{}
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		args[k] = v
	}
	fail := func(format string, a ...any) []string {
		s.t.Fatalf("%s:%d: %s: %s", file, line, cmd, fmt.Sprintf(format, a...))
		return nil
	}
	switch fields[0] {
	case "plan":
		spec, err := specOf(args)
		if err != nil {
			return fail("%v", err)
		}
		s.state, s.obs = State{}, Observation{}
		if s.plan, err = FromSpec(spec); err != nil {
			return strings.Split(err.Error(), "\n")
		}
		_, s.plan.AutoPromote = args["auto-promote"]
		return []string{"ok"}
	case "observe":
		for k, v := range args {
			if k == "ready" {
				r, t, _ := strings.Cut(v, "/")
				s.obs.Ready, s.obs.Total = atoi(r), atoi(t)
				continue
			}
			ptr := map[string]*int{"requests": &s.obs.Requests, "errors": &s.obs.Errors,
				"trips": &s.obs.BreakerTrips, "restarts": &s.obs.Restarts, "unmeasured": &s.obs.Unmeasured}[k]
			if ptr == nil {
				return fail("unknown metric %q", k)
			}
			*ptr = atoi(v)
		}
	case "action":
		s.obs.Action = v1alpha1.CanaryAction(fields[1])
	case "handover":
		s.obs.Owned = s.state.Canary
	case "rolled-out":
		s.obs.StableRolledOut = true
	case "advance":
		d, err := time.ParseDuration(fields[1])
		if err != nil {
			return fail("%v", err)
		}
		s.now = s.now.Add(d)
	case "edit":
		spec, err := specOf(args)
		if err != nil {
			return fail("%v", err)
		}
		edited, err := FromSpec(spec)
		if err != nil {
			return strings.Split(err.Error(), "\n")
		}
		st := s.plan.Status(s.state)
		s.plan, s.state = edited, edited.Restore(&st, s.state.Canary)
		return []string{"restored: " + s.describeState(s.state)}
	case "restart-manager":
		st := s.plan.Status(s.state)
		s.state = s.plan.Restore(&st, s.state.Canary)
		s.obs.Requests, s.obs.Errors, s.obs.BreakerTrips, s.obs.Restarts = 0, 0, 0, 0
		s.obs.MeasuredSince = s.now
		return []string{"restored: " + s.describeState(s.state)}
	case "step":
		return s.step(fail)
	default:
		return fail("unknown command")
	}
	return nil
}

func (s *script) step(fail func(string, ...any) []string) []string {
	next, res := Step(s.plan, s.state, s.obs, s.now)
	if again, res2 := Step(s.plan, s.state, s.obs, s.now); !reflect.DeepEqual(again, next) || !reflect.DeepEqual(res2, res) {
		return fail("not pure: a second call gave %+v %+v", again, res2)
	}
	if fix, res2 := Step(s.plan, next, s.obs, s.now); !reflect.DeepEqual(fix, next) || len(res2.Events) > 0 {
		return fail("not a fixpoint: calling again with its State gave %+v %+v", fix, res2.Events)
	}
	if !res.Canary.Equal(next.Canary) {
		return fail("Result.Canary %v is not State.Canary %v", res.Canary, next.Canary)
	}
	grew := "unchanged"
	switch {
	case next.Canary.Equal(s.state.Canary):
	case next.Canary.ContainsSet(s.state.Canary):
		grew = "grown, contains the previous set"
	case next.Phase.Final() && next.Canary.Empty():
		grew = "emptied"
	default:
		return fail("the canary set %v lost hashes of %v without ending the rollout", next.Canary, s.state.Canary)
	}
	if !next.StepStart.Equal(s.state.StepStart) {
		s.obs.Requests, s.obs.Errors, s.obs.BreakerTrips, s.obs.Restarts = 0, 0, 0, 0
		s.obs.MeasuredSince = time.Time{}
	}
	out := []string{fmt.Sprintf("%s (%s)", s.describeState(next), grew)}
	flags := fmt.Sprintf("result: requeue=%v", res.RequeueAfter)
	if res.Promote {
		flags += " promote"
	}
	if res.Finished {
		flags += " finished"
	}
	out = append(out, flags)
	for _, e := range res.Events {
		out = append(out, fmt.Sprintf("event %s %s: %s", e.Type, e.Reason, e.Message))
	}
	s.state = next
	return out
}

func (s *script) describeState(st State) string {
	return fmt.Sprintf("%s step=%d start=%s canary=%s", st.Phase, st.Step, s.since(st.StepStart), s.describeSet(st.Canary))
}

func (s *script) since(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return "t+" + t.Sub(scriptStart).String()
}

// describeSet is a set for scripts: its share of the space, its range count and the named namespaces in it.
func (s *script) describeSet(set shard.Set) string {
	if set.Empty() {
		return "nothing"
	}
	var named []string
	for _, st := range s.plan.Steps {
		for _, ns := range st.Namespaces {
			if set.ContainsNamespace(ns) {
				named = append(named, ns)
			}
		}
	}
	out := fmt.Sprintf("%.2f%% in %d ranges", set.Fraction()*100, set.RangeCount())
	if len(named) > 0 {
		out += " + " + strings.Join(named, " ")
	}
	return out
}

func specOf(args map[string]string) (*v1alpha1.Canary, error) {
	spec := &v1alpha1.Canary{}
	if v := args["namespaces"]; v != "" {
		spec.Namespaces = strings.Split(v, ",")
	}
	if v := args["steps"]; v != "" {
		for _, st := range strings.Split(v, ",") {
			pct, pause, hasPause := strings.Cut(st, "/")
			step := v1alpha1.CanaryStep{Percent: int32(atoi(pct))}
			if hasPause {
				d, err := time.ParseDuration(pause)
				if err != nil {
					return nil, err
				}
				step.Pause = &metav1.Duration{Duration: d}
			}
			spec.Steps = append(spec.Steps, step)
		}
	}
	a := &v1alpha1.CanaryAnalysis{}
	for key, field := range map[string]**int32{"max-error-rate": &a.MaxErrorRatePercent,
		"max-trips": &a.MaxBreakerTrips, "max-restarts": &a.MaxRestarts} {
		if v, ok := args[key]; ok {
			n := int32(atoi(v))
			*field, spec.Analysis = &n, a
		}
	}
	return spec, nil
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -999 // shows up as a validation error or an odd result
	}
	return n
}
