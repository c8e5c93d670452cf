package suite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInterleaveAlternatesVariants(t *testing.T) {
	var order []string
	variant := func(name string, value float64) Variant {
		return Variant{Name: name, Run: func(_ context.Context, rep int) (map[string]float64, error) {
			order = append(order, name)
			return map[string]float64{"m": value * float64(rep+1)}, nil
		}}
	}
	env := &Env{Logf: t.Logf}
	s, err := Interleave(context.Background(), env, 3, variant("a", 1), variant("b", 10))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(order, " "); got != "a b a b a b" {
		t.Errorf("run order %q, want a b a b a b", got)
	}
	if got := s["b"]["m"]; len(got) != 3 || got[0] != 10 || got[2] != 30 {
		t.Errorf("samples of b = %v, want [10 20 30] in repetition order", got)
	}
}

func TestCompareBars(t *testing.T) {
	s := Samples{"proxy": {"t": {1.1, 1.0, 1.3}}, "direct": {"t": {1.0, 1.0, 1.0}}}
	for _, tc := range []struct {
		kind, bar string
		median    float64
		met       *bool
	}{
		{"ratio", "<= 1.05", 1.1, ptr(false)},
		{"ratio", "<= 1.2", 1.1, ptr(true)},
		{"ratio", "", 1.1, nil},
		{"difference", ">= 0.05", 0.1, ptr(true)},
	} {
		var r Result
		r.Compare(s, "t", tc.kind, "proxy", "direct", tc.bar)
		c := r.Comparisons[0]
		if d := c.Median - tc.median; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s %q: median %v, want %v", tc.kind, tc.bar, c.Median, tc.median)
		}
		if (c.Met == nil) != (tc.met == nil) || (c.Met != nil && *c.Met != *tc.met) {
			t.Errorf("%s %q: met %v, want %v", tc.kind, tc.bar, c.Met, tc.met)
		}
	}
}

func ptr(b bool) *bool { return &b }

func TestOnlyChosenVariantsRun(t *testing.T) {
	var ran []string
	variant := func(name string) Variant {
		return Variant{Name: name, Run: func(context.Context, int) (map[string]float64, error) {
			ran = append(ran, name)
			return map[string]float64{"m": 1}, nil
		}}
	}
	env := &Env{Logf: t.Logf, Variants: []string{"c", "a"}}
	s, err := Interleave(context.Background(), env, 2, variant("a"), variant("b"), variant("c"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ran, " "); got != "a c a c" {
		t.Errorf("run order %q, want a c a c", got)
	}
	var r Result
	r.Compare(s, "m", "ratio", "a", "b", "<= 1")
	r.Compare(s, "m", "ratio", "c", "a", "<= 1")
	r.Check(s, "m", "b", ">= 1")
	r.AddSeries("g", "s", "x", "y", []float64{1, 2}, [][]float64{s["b"]["m"], s["c"]["m"]})
	if len(r.Comparisons) != 1 || r.Comparisons[0].A != "c" {
		t.Errorf("comparisons %+v: want only c / a (b did not run)", r.Comparisons)
	}
	if len(r.Series) != 1 || len(r.Series[0].Points) != 1 || r.Series[0].Points[0].X != 2 {
		t.Errorf("series %+v: want the point of c alone", r.Series)
	}

	env.Variants = []string{"d"}
	if _, err := Interleave(context.Background(), env, 1, variant("a")); err == nil || !strings.Contains(err.Error(), `"d"`) {
		t.Errorf("unknown variant: error %v, want one naming it", err)
	}
}

func TestReportWritesMarkdownJSONAndPlots(t *testing.T) {
	s := Samples{"direct": {"sync": {1, 1.1, 0.9}}, "proxy": {"sync": {1.02, 1.1, 0.95}}}
	r := &Result{Scenario: "demo", Description: "A demo.", Scale: Tiny, Reps: 3, Command: "go run ./test/bench -scenario demo"}
	r.Record(s, Metric{Name: "sync", Unit: "s", Bound: "CPU"})
	r.Compare(s, "sync", "ratio", "proxy", "direct", "<= 1.05")
	r.AddSeries("scaling", "server", "shards", "s", []float64{1, 2}, [][]float64{{1, 1.1}, {0.6, 0.5}})
	rep := &Report{Machine: Machine{Cores: 2, MemoryGiB: "24"}, Command: "go run ./test/bench", Results: []*Result{r}}
	dir := t.TempDir()
	files, err := rep.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"report.md", "report.json", "demo-tiny-ratios.png", "demo-tiny-scaling.png"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Size() == 0 {
			t.Errorf("%s not written (files %v): %v", name, files, err)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, want := range []string{"## demo (tiny)", "| sync: proxy / direct | 1.02 |", "![demo-tiny-ratios.png](demo-tiny-ratios.png)", "2 cores"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
}

func TestMergeKeepsEachScale(t *testing.T) {
	res := func(scenario string, scale Scale, reps int) *Result {
		return &Result{Scenario: scenario, Scale: scale, Reps: reps}
	}
	earlier := &Report{Results: []*Result{res("a", Full, 3), res("b", Small, 3), res("b", Full, 1)}}
	rep := &Report{Results: []*Result{res("b", Small, 5)}}
	rep.Merge(earlier, []string{"a", "b"})
	var got []string
	for _, r := range rep.Results {
		got = append(got, fmt.Sprintf("%s/%s/%d", r.Scenario, r.Scale, r.Reps))
	}
	if want := "a/full/3 b/small/5 b/full/1"; strings.Join(got, " ") != want {
		t.Errorf("merged %v, want %s", got, want)
	}
}
