package canary

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/shard"
)

func i32(v int32) *int32 { return &v }

func TestFromSpec(t *testing.T) {
	spec := &v1alpha1.Canary{
		Namespaces: []string{"shop", "blog"},
		Steps: []v1alpha1.CanaryStep{{Percent: 10, Pause: &metav1.Duration{Duration: 5 * time.Minute}},
			{Percent: 100}},
		Analysis: &v1alpha1.CanaryAnalysis{MaxRestarts: i32(2)},
	}
	p, err := FromSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	want := []PlanStep{{Namespaces: []string{"shop", "blog"}, Pause: 5 * time.Minute},
		{Percent: 10, Pause: 5 * time.Minute}, {Percent: 100}}
	if len(p.Steps) != len(want) {
		t.Fatalf("steps = %+v, want %+v", p.Steps, want)
	}
	for i := range want {
		if got := p.Steps[i]; got.Percent != want[i].Percent || got.Pause != want[i].Pause ||
			strings.Join(got.Namespaces, ",") != strings.Join(want[i].Namespaces, ",") {
			t.Errorf("step %d = %+v, want %+v", i, got, want[i])
		}
	}
	if a := (Analysis{NoLimit, NoLimit, 2}); p.Analysis != a {
		t.Errorf("analysis = %+v, want %+v", p.Analysis, a)
	}
	if p.AutoPromote || p.Interval != DefaultInterval {
		t.Errorf("autoPromote %v interval %v, want false %v", p.AutoPromote, p.Interval, DefaultInterval)
	}
	spec.Namespaces[0] = "changed"
	if p.Steps[0].Namespaces[0] != "shop" {
		t.Error("the plan shares the spec's namespace slice")
	}
}

func TestValidate(t *testing.T) {
	ok := Analysis{5, 0, NoLimit}
	for _, tc := range []struct {
		name string
		plan Plan
		want []string // substrings of the error, one per problem; none means valid
	}{
		{"named then percents", Plan{Steps: []PlanStep{{Namespaces: []string{"a", "b"}}, {Percent: 0}, {Percent: 0},
			{Percent: 50, Pause: time.Minute}, {Percent: 100}}, Analysis: ok, Interval: time.Second}, nil},
		{"several named steps", Plan{Steps: []PlanStep{{Namespaces: []string{"a"}}, {Namespaces: []string{"b"}}},
			Analysis: ok, Interval: time.Second}, nil},
		{"no steps", Plan{Analysis: ok, Interval: time.Second}, []string{"at least one step"}},
		{"decreasing", Plan{Steps: []PlanStep{{Percent: 30}, {Percent: 10}}, Analysis: ok, Interval: time.Second},
			[]string{"step 1: percent 10 is below the previous step's 30"}},
		{"out of range", Plan{Steps: []PlanStep{{Percent: -1}, {Percent: 101}}, Analysis: ok, Interval: time.Second},
			[]string{"step 0: percent must be in 0..100, got -1", "step 1: percent must be in 0..100, got 101"}},
		{"named after percent", Plan{Steps: []PlanStep{{Percent: 10}, {Namespaces: []string{"a"}}}, Analysis: ok,
			Interval: time.Second}, []string{"step 1: named namespaces must come before"}},
		{"both", Plan{Steps: []PlanStep{{Namespaces: []string{"a"}, Percent: 5}}, Analysis: ok, Interval: time.Second},
			[]string{"step 0: a step has namespaces or a percent, not both"}},
		{"bad and repeated namespaces", Plan{Steps: []PlanStep{{Namespaces: []string{"Shop", "a"}},
			{Namespaces: []string{"a"}}}, Analysis: ok, Interval: time.Second},
			[]string{`step 0: namespace "Shop"`, `step 1: namespace "a" is named twice`}},
		{"negative pause", Plan{Steps: []PlanStep{{Percent: 5, Pause: -time.Second}}, Analysis: ok,
			Interval: time.Second}, []string{"step 0: pause must not be negative"}},
		{"bounds", Plan{Steps: []PlanStep{{Percent: 5}}, Analysis: Analysis{101, -2, -3}},
			[]string{"maxErrorRatePercent must be <= 100", "maxBreakerTrips must be >= 0", "maxRestarts must be >= 0",
				"interval must be > 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.plan.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tc.want) {
				t.Errorf("got %d problems, want %d:\n%v", len(lines), len(tc.want), err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
	if _, err := FromSpec(nil); err == nil {
		t.Error("FromSpec(nil) gave no error")
	}
	if _, err := FromSpec(&v1alpha1.Canary{Steps: []v1alpha1.CanaryStep{{Percent: 50}, {Percent: 20}}}); err == nil {
		t.Error("FromSpec accepted decreasing percents")
	}
}

// PercentSet grows with the percent, covers the share it says, and takes it from every sixteenth of the space, so
// each of n <= 16 evenly split stable shards loses about p% of its hashes.
func TestPercentSet(t *testing.T) {
	var prev shard.Set
	for p := int32(0); p <= 100; p++ {
		s := PercentSet(p)
		if !s.ContainsSet(prev) {
			t.Fatalf("PercentSet(%d) does not contain PercentSet(%d)", p, p-1)
		}
		if got := s.Fraction() * 100; got < float64(p)-1e-9 || got > float64(p)+1e-9 {
			t.Errorf("PercentSet(%d) covers %.12f%%", p, got)
		}
		// Shard counts that divide the 16 stripes lose exactly p%; others lose p% give or take a stripe's share.
		for _, n := range []int{2, 3, 7, 16} {
			lo, hi := float64(p)-1e-6, float64(p)+1e-6
			if 16%n != 0 {
				lo, hi = float64(p)*0.5, float64(p)*1.5+1e-6
			}
			for i, stable := range shard.Split(n) {
				if lost := stable.Intersect(s).Fraction() / stable.Fraction() * 100; lost < lo || lost > hi {
					t.Errorf("PercentSet(%d) takes %.3f%% of shard %d of %d", p, lost, i, n)
				}
			}
		}
		prev = s
	}
	if !PercentSet(0).Empty() || !PercentSet(100).IsFull() || !PercentSet(200).IsFull() || !PercentSet(-5).Empty() {
		t.Error("PercentSet ends are wrong")
	}
}

// Plan.Set never shrinks from one step to the next and keeps the named namespaces for good.
func TestPlanSetGrows(t *testing.T) {
	p := Plan{Steps: []PlanStep{{Namespaces: []string{"shop"}}, {Namespaces: []string{"blog", "wiki"}}, {Percent: 0},
		{Percent: 1}, {Percent: 1}, {Percent: 40}, {Percent: 100}}}
	if !p.Set(-1).Empty() {
		t.Error("Set(-1) is not empty")
	}
	for i := range p.Steps {
		if !p.Set(i).ContainsSet(p.Set(i - 1)) {
			t.Errorf("Set(%d) does not contain Set(%d)", i, i-1)
		}
	}
	if s := p.Set(0); !s.ContainsNamespace("shop") || s.ContainsNamespace("blog") || s.RangeCount() != 1 {
		t.Errorf("Set(0) = %v, want only shop", s)
	}
	if s := p.Set(2); !s.Equal(p.Set(1)) {
		t.Errorf("a 0%% step after named steps is %v, want the named namespaces %v", s, p.Set(1))
	}
}
