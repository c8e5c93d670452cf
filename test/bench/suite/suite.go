package suite

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"
)

// Scale is how big a run's objects are: the numbers (full), a size that runs in minutes on a 2-core
// machine (small), or one that runs in seconds so CI keeps every scenario alive (tiny).
type Scale string

// The scales.
const (
	Tiny  Scale = "tiny"
	Small Scale = "small"
	Full  Scale = "full"
)

// ParseScale checks s.
func ParseScale(s string) (Scale, error) {
	switch sc := Scale(s); sc {
	case Tiny, Small, Full:
		return sc, nil
	}
	return "", fmt.Errorf("scale %q: want tiny, small or full", s)
}

// Pick returns the value for the scale.
func (s Scale) Pick(tiny, small, full int) int {
	switch s {
	case Full:
		return full
	case Small:
		return small
	}
	return tiny
}

// Env is what a scenario runs with.
type Env struct {
	Scale Scale
	// Reps is how many times each variant runs, interleaved.
	Reps int
	// Variants, when set, are the only variants that run (by name); comparisons missing a side are left out. It
	// is for a long scale where running every variant would take hours.
	Variants []string
	// BinDir holds fedmesh's manager, proxy and federator binaries (test/fedrun.Build).
	BinDir string
	// ProfileDir, when set, is where scenarios that run the federator save its CPU profiles while it works, and
	// its heap profile once done.
	ProfileDir string
	// Logf reports progress.
	Logf func(format string, args ...any)
}

// Runs reports whether the variant called name runs (see Variants).
func (e *Env) Runs(name string) bool {
	return len(e.Variants) == 0 || slices.Contains(e.Variants, name)
}

// Scenario is one benchmark: it measures its variants and records figures in its Result.
type Scenario struct {
	Name        string
	Description string
	Run         func(ctx context.Context, env *Env, res *Result) error
}

// Variant is one side of a comparison; Run measures it once and returns its figures by metric name.
type Variant struct {
	Name string
	Run  func(ctx context.Context, rep int) (map[string]float64, error)
}

// Samples are the figures of every repetition: variant -> metric -> one value per repetition, in order.
type Samples map[string]map[string][]float64

// Interleave runs the variants in turn, A B C A B C ..., reps times, so drift of the machine (other load, a
// growing etcd) spreads over all variants alike instead of favouring the first.
// With env.Variants, only those run.
func Interleave(ctx context.Context, env *Env, reps int, variants ...Variant) (Samples, error) {
	out := Samples{}
	if len(env.Variants) > 0 {
		var names []string
		for _, v := range variants {
			names = append(names, v.Name)
		}
		for _, name := range env.Variants {
			if !slices.Contains(names, name) {
				return out, fmt.Errorf("variant %q: this scenario has %v", name, names)
			}
		}
		variants = slices.DeleteFunc(slices.Clone(variants), func(v Variant) bool { return !env.Runs(v.Name) })
	}
	for rep := range reps {
		for _, v := range variants {
			if err := ctx.Err(); err != nil {
				return out, err
			}
			start := time.Now()
			figs, err := v.Run(ctx, rep)
			if err != nil {
				return out, fmt.Errorf("%s (repetition %d): %w", v.Name, rep+1, err)
			}
			env.Logf("  %s rep %d/%d: %s (%s)", v.Name, rep+1, reps, brief(figs), time.Since(start).Round(time.Millisecond))
			if out[v.Name] == nil {
				out[v.Name] = map[string][]float64{}
			}
			for m, x := range figs {
				out[v.Name][m] = append(out[v.Name][m], x)
			}
		}
	}
	return out, nil
}

func brief(figs map[string]float64) string {
	s := ""
	for _, m := range sortedKeys(figs) {
		s += fmt.Sprintf("%s=%.4g ", m, figs[m])
	}
	return s
}

// Metric describes a figure: its unit and what bounded it on this machine.
type Metric struct {
	Name  string `json:"name"`
	Unit  string `json:"unit"`
	Bound string `json:"bound,omitempty"`
}

// Figure is one metric of one variant.
type Figure struct {
	Metric
	Variant string    `json:"variant"`
	Samples []float64 `json:"samples"`
	Summary
}

// Comparison is a paired figure of two variants, their ratio or difference per repetition.
type Comparison struct {
	Metric string `json:"metric"`
	// Kind is "ratio" (A/B), "difference" (A-B, in the metric's unit) or "value" (A itself, against an absolute
	// bar; B is empty).
	Kind    string    `json:"kind"`
	A       string    `json:"a"`
	B       string    `json:"b"`
	Unit    string    `json:"unit,omitempty"`
	Samples []float64 `json:"samples"`
	Summary
	// Bar is the target, e.g. "<= 1.05", and Met whether the median meets it; nil when there is no target.
	Bar string `json:"bar,omitempty"`
	Met *bool  `json:"met,omitempty"`
}

// Point is one x of a series with the summary of its y.
type Point struct {
	X float64 `json:"x"`
	Summary
}

// Series is a figure plotted against a parameter (e.g. sync time against the number of shards).
type Series struct {
	Name   string  `json:"name"`
	XLabel string  `json:"xLabel"`
	YLabel string  `json:"yLabel"`
	Points []Point `json:"points"`
	// Group names the plot the series is drawn in; series of one group share axes.
	Group string `json:"group"`
}

// Result is everything a scenario measured.
type Result struct {
	Scenario string `json:"scenario"`
	// Started and Commit say when and on which fedmesh this scenario was measured: a report may hold scenarios
	// of several runs (see Report.Merge).
	Started time.Time `json:"started"`
	Commit  string    `json:"commit,omitempty"`
	// CPU is the processor it ran on: machines of one kind differ in it, and its figures are of that machine.
	CPU         string `json:"cpu,omitempty"`
	Description string `json:"description"`
	Scale       Scale  `json:"scale"`
	Reps        int    `json:"reps"`
	// Variants are the variants chosen to run, when not all did.
	Variants    []string       `json:"variants,omitempty"`
	Command     string         `json:"command"`
	Duration    float64        `json:"durationSeconds"`
	Error       string         `json:"error,omitempty"`
	Parameters  map[string]any `json:"parameters,omitempty"`
	Figures     []Figure       `json:"figures"`
	Comparisons []Comparison   `json:"comparisons"`
	Series      []Series       `json:"series,omitempty"`
	Notes       []string       `json:"notes,omitempty"`
}

// Param records a parameter of the run (object counts, shard counts) for the report.
func (r *Result) Param(name string, value any) {
	if r.Parameters == nil {
		r.Parameters = map[string]any{}
	}
	r.Parameters[name] = value
}

// Note adds a line of explanation to the report.
func (r *Result) Note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// Record adds a figure for every variant of s that has the metric.
func (r *Result) Record(s Samples, metrics ...Metric) {
	for _, m := range metrics {
		for _, v := range sortedKeys(s) {
			if xs, ok := s[v][m.Name]; ok {
				r.Figures = append(r.Figures, Figure{Metric: m, Variant: v, Samples: xs, Summary: Summarize(xs)})
			}
		}
	}
}

// Compare adds the paired ratio (kind "ratio") or difference (kind "difference") of metric between variants a
// and b. bar is an optional target on the median: "<= x" or ">= x". A side that did not run (see Env.Variants)
// leaves the comparison out.
func (r *Result) Compare(s Samples, metric, kind, a, b, bar string) {
	if len(s[a][metric]) == 0 || len(s[b][metric]) == 0 {
		return
	}
	fn, unit := Ratio, ""
	if kind == "difference" {
		fn = Difference
		unit = r.unitOf(metric)
	}
	// A ratio over a zero is no figure (and JSON has no NaN): such repetitions are left out.
	xs := slices.DeleteFunc(Paired(s[a][metric], s[b][metric], fn), math.IsNaN)
	c := Comparison{Metric: metric, Kind: kind, A: a, B: b, Unit: unit, Samples: xs, Summary: Summarize(xs), Bar: bar}
	c.Met = meets(c.Median, bar)
	r.Comparisons = append(r.Comparisons, c)
}

// Check adds variant's own figure of metric, held against an absolute bar ("<= x" or ">= x"), if it ran.
func (r *Result) Check(s Samples, metric, variant, bar string) {
	xs := s[variant][metric]
	if len(xs) == 0 {
		return
	}
	c := Comparison{Metric: metric, Kind: "value", A: variant, Unit: r.unitOf(metric), Samples: xs, Summary: Summarize(xs), Bar: bar}
	c.Met = meets(c.Median, bar)
	r.Comparisons = append(r.Comparisons, c)
}

func (r *Result) unitOf(metric string) string {
	for _, f := range r.Figures {
		if f.Name == metric {
			return f.Unit
		}
	}
	return ""
}

// meets checks x against a bar "<= v" or ">= v"; nil when there is no bar or it does not parse.
func meets(x float64, bar string) *bool {
	var op string
	var v float64
	if _, err := fmt.Sscanf(bar, "%s %g", &op, &v); err != nil || math.IsNaN(x) {
		return nil
	}
	var ok bool
	switch op {
	case "<=":
		ok = x <= v
	case ">=":
		ok = x >= v
	default:
		return nil
	}
	return &ok
}

// AddSeries adds a series whose points summarize ys[i] at xs[i]; an x without samples (its variant did not run)
// is left out, and so is a series without points.
func (r *Result) AddSeries(group, name, xLabel, yLabel string, xs []float64, ys [][]float64) {
	s := Series{Name: name, XLabel: xLabel, YLabel: yLabel, Group: group}
	for i, x := range xs {
		if len(ys[i]) > 0 {
			s.Points = append(s.Points, Point{X: x, Summary: Summarize(ys[i])})
		}
	}
	if len(s.Points) > 0 {
		r.Series = append(r.Series, s)
	}
}

// Figure returns the figure of metric for variant, if recorded.
func (r *Result) Figure(metric, variant string) (Figure, bool) {
	for _, f := range r.Figures {
		if f.Name == metric && f.Variant == variant {
			return f, true
		}
	}
	return Figure{}, false
}
