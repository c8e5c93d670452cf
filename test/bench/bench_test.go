package main

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fedmesh/fedmesh/test/bench/runner"
	"github.com/fedmesh/fedmesh/test/bench/suite"
)

// TestEveryScenarioAtTinyScale runs the whole suite with tiny object counts, so that no scenario rots: each must
// finish, measure figures that are finite and not negative, with its key figures above zero, and the report must
// be written. The values themselves are what `make bench` is for.
func TestEveryScenarioAtTinyScale(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	dir := t.TempDir()
	rep, _, err := runner.Run(ctx, runner.Options{Scale: suite.Tiny, Reps: 1, OutDir: dir, Command: "go test ./test/bench", Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != len(runner.Names()) {
		t.Fatalf("%d results, want one per scenario %v", len(rep.Results), runner.Names())
	}
	positive := map[string]bool{"informer-sync": true, "get-p50": true, "watch-burst-last-event": true, "proxy-rss": true,
		"shard-sync-mean": true, "shard-sync-alone-mean": true, "shard-rss-mean": true, "objects-per-shard-max": true, "aggregate-status": true, "interpret-replica": true,
		"converge": true, "templates-per-s": true, "member-deployments": true, "in-force": true, "served": true,
		"ready": true, "caught-up": true, "shard-works": true}
	for _, r := range rep.Results {
		if r.Error != "" {
			t.Errorf("%s: %s", r.Scenario, r.Error)
			continue
		}
		if len(r.Figures) == 0 || len(r.Comparisons) == 0 {
			t.Errorf("%s: %d figures, %d comparisons; want some of each", r.Scenario, len(r.Figures), len(r.Comparisons))
		}
		for _, f := range r.Figures {
			if math.IsNaN(f.Median) || math.IsInf(f.Median, 0) || f.Min < 0 || (positive[f.Name] && f.Median <= 0) {
				t.Errorf("%s: %s of %s = %v (samples %v)", r.Scenario, f.Name, f.Variant, f.Median, f.Samples)
			}
		}
		for _, c := range r.Comparisons {
			if math.IsNaN(c.Median) || math.IsInf(c.Median, 0) {
				t.Errorf("%s: %s %s/%s = %v", r.Scenario, c.Metric, c.A, c.B, c.Median)
			}
		}
	}
	for _, name := range []string{"report.md", "report.json", "proxy-overhead-tiny-ratios.png", "shard-scaling-tiny-sync.png", "handover-tiny-ratios.png"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() == 0 {
			t.Errorf("%s not written: %v", name, err)
		}
	}
}
