package suite

import (
	"context"
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
		c := r.Compare(s, "t", tc.kind, "proxy", "direct", tc.bar)
		if d := c.Median - tc.median; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s %q: median %v, want %v", tc.kind, tc.bar, c.Median, tc.median)
		}
		if (c.Met == nil) != (tc.met == nil) || (c.Met != nil && *c.Met != *tc.met) {
			t.Errorf("%s %q: met %v, want %v", tc.kind, tc.bar, c.Met, tc.met)
		}
	}
}

func ptr(b bool) *bool { return &b }

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
	for _, name := range []string{"report.md", "report.json", "demo-ratios.png", "demo-scaling.png"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Size() == 0 {
			t.Errorf("%s not written (files %v): %v", name, files, err)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, want := range []string{"## demo", "| sync: proxy / direct | 1.02 |", "![demo-ratios.png](demo-ratios.png)", "2 cores"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
}
