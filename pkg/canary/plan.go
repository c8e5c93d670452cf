package canary

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/shard"
)

// NoLimit is an analysis bound that is not checked.
const NoLimit = -1

// DefaultInterval is how often a rollout that waits is analysed again when the spec does not say.
const DefaultInterval = 30 * time.Second

// stripes is how many equal slices of the hash space a percent step takes its share from: p% of a step is the lowest
// p% of each stripe. Taking a little of every slice spreads the canary over all stable shards (each loses about p% of
// its namespaces) without depending on the stable assignment, so a rescale of the stable shards mid-rollout moves no
// canary namespace; 16 keeps the canary's and each stable shard's selector to a few ranges.
const stripes = 16

// Plan is a validated canary rollout: its steps in order, the bounds of the analysis, and how it ends.
type Plan struct {
	// Steps are applied in order. Named steps (Namespaces set) come first, then percent steps.
	Steps []PlanStep
	// Analysis bounds the canary's health during a step; crossing a bound rolls the canary back.
	Analysis Analysis
	// AutoPromote promotes once the last step has passed its analysis; otherwise the rollout waits, still
	// analysing, for the action Promote. The API has no such field, so FromSpec leaves it false.
	AutoPromote bool
	// Interval is how often a waiting rollout is analysed again (the longest RequeueAfter).
	Interval time.Duration
}

// PlanStep is one step: either named namespaces or a percentage of the hash space. Each step's canary set contains
// the previous step's: named namespaces stay on the canary for the rest of the rollout, and percentages grow.
type PlanStep struct {
	// Namespaces, if set, make this a named step: exactly these namespaces move, as one-point ranges.
	Namespaces []string
	// Percent is the share of the hash space the canary owns during a percent step, on top of named namespaces.
	Percent int32
	// Pause is how long the step is analysed, after its handover, before the next step.
	Pause time.Duration
}

// Named reports whether s is a named step.
func (s PlanStep) Named() bool { return len(s.Namespaces) > 0 }

// Analysis bounds what the canary may do wrong during a step; NoLimit turns a bound off. Readiness is always checked:
// every canary pod must be ready once the step's pause is over.
type Analysis struct {
	MaxErrorRatePercent int
	MaxBreakerTrips     int
	MaxRestarts         int
}

// FromSpec is the Plan of the API's Canary: one named step with spec.Namespaces (if any), analysed for as long as
// the first percent step's pause (the API has no pause of its own for it), then one step per spec.Steps entry.
// The plan is validated; the error lists every problem.
func FromSpec(spec *v1alpha1.Canary) (Plan, error) {
	if spec == nil {
		return Plan{}, errors.New("no canary")
	}
	p := Plan{Analysis: Analysis{NoLimit, NoLimit, NoLimit}, Interval: DefaultInterval}
	for _, s := range spec.Steps {
		var pause time.Duration
		if s.Pause != nil {
			pause = s.Pause.Duration
		}
		p.Steps = append(p.Steps, PlanStep{Percent: s.Percent, Pause: pause})
	}
	if len(spec.Namespaces) > 0 {
		named := PlanStep{Namespaces: slices.Clone(spec.Namespaces)}
		if len(p.Steps) > 0 {
			named.Pause = p.Steps[0].Pause
		}
		p.Steps = append([]PlanStep{named}, p.Steps...)
	}
	if a := spec.Analysis; a != nil {
		p.Analysis.MaxErrorRatePercent = limit(a.MaxErrorRatePercent)
		p.Analysis.MaxBreakerTrips = limit(a.MaxBreakerTrips)
		p.Analysis.MaxRestarts = limit(a.MaxRestarts)
	}
	return p, p.Validate()
}

func limit(v *int32) int {
	if v == nil {
		return NoLimit
	}
	return int(*v)
}

// Validate reports every problem of p: no steps, a named step after a percent step, an invalid or repeated
// namespace, a percent outside 0..100 or below the one before, a negative pause or bound, a non-positive interval.
func (p Plan) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(p.Steps) == 0 {
		add("a canary needs at least one step or named namespace")
	}
	seen := map[string]bool{}
	lastPercent, percentSeen := int32(0), false
	for i, s := range p.Steps {
		switch {
		case s.Named() && s.Percent != 0:
			add("step %d: a step has namespaces or a percent, not both", i)
		case s.Named() && percentSeen:
			add("step %d: named namespaces must come before the percent steps", i)
		case !s.Named():
			if s.Percent < 0 || s.Percent > 100 {
				add("step %d: percent must be in 0..100, got %d", i, s.Percent)
			}
			if percentSeen && s.Percent < lastPercent {
				add("step %d: percent %d is below the previous step's %d; percents must not decrease", i, s.Percent, lastPercent)
			}
			lastPercent, percentSeen = s.Percent, true
		}
		for _, ns := range s.Namespaces {
			if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
				add("step %d: namespace %q: %s", i, ns, msgs[0])
			}
			if seen[ns] {
				add("step %d: namespace %q is named twice", i, ns)
			}
			seen[ns] = true
		}
		if s.Pause < 0 {
			add("step %d: pause must not be negative, got %v", i, s.Pause)
		}
	}
	for _, b := range []struct {
		name  string
		value int
	}{{"maxErrorRatePercent", p.Analysis.MaxErrorRatePercent}, {"maxBreakerTrips", p.Analysis.MaxBreakerTrips},
		{"maxRestarts", p.Analysis.MaxRestarts}} {
		if b.value < NoLimit {
			add("analysis: %s must be >= 0 (or NoLimit), got %d", b.name, b.value)
		}
	}
	if p.Analysis.MaxErrorRatePercent > 100 {
		add("analysis: maxErrorRatePercent must be <= 100, got %d", p.Analysis.MaxErrorRatePercent)
	}
	if p.Interval <= 0 {
		add("interval must be > 0, got %v", p.Interval)
	}
	return errors.Join(errs...)
}

// Set is what the canary owns during step i: the namespaces of every named step up to i, and the percent of step i
// (if it is a percent step) taken as the lowest share of each of 16 equal stripes of the hash space. Set(i)
// contains Set(i-1). Set(-1), before the first step, is empty.
func (p Plan) Set(i int) shard.Set {
	var out shard.Set
	for j := 0; j <= i && j < len(p.Steps); j++ {
		for _, ns := range p.Steps[j].Namespaces {
			out = out.Union(shard.Point(shard.NamespaceHash(ns)))
		}
	}
	if i >= 0 && i < len(p.Steps) && !p.Steps[i].Named() {
		out = out.Union(PercentSet(p.Steps[i].Percent))
	}
	return out
}

// PercentSet is the hashes a percent step of p% gives the canary: in each of 16 equal stripes of the hash space,
// the lowest p% of it, rounded down. PercentSet(p) contains PercentSet(q) for p >= q; 0 is empty, 100 is everything.
func PercentSet(p int32) shard.Set {
	p = min(max(p, 0), 100)
	const width = uint64(1) << 60 // 2^64 / stripes
	hi, lo := bits.Mul64(uint64(p), width)
	n, _ := bits.Div64(hi, lo, 100) // p*width/100 <= width, no overflow
	if n == 0 {
		return shard.Set{}
	}
	rs := make([]shard.Range, stripes)
	for j := range rs {
		first := uint64(j) * width
		rs[j] = shard.Range{First: first, Last: first + n - 1}
	}
	return shard.NewSet(rs...)
}
