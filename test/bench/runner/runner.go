package runner

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/fedmesh/fedmesh/test/bench/scenarios"
	"github.com/fedmesh/fedmesh/test/bench/suite"
	"github.com/fedmesh/fedmesh/test/cluster"
	"github.com/fedmesh/fedmesh/test/fedrun"
)

// Options say what to run and where to write the report.
type Options struct {
	// Scenarios are the names to run; empty runs all.
	Scenarios []string
	Scale     suite.Scale
	Reps      int
	// Variants, when set, are the only variants that run (see suite.Env).
	Variants []string
	OutDir   string
	// ProfileDir is suite.Env's.
	ProfileDir string
	// Command is how the whole run was started, for the report.
	Command string
	Logf    func(format string, args ...any)
}

// Names lists every scenario.
func Names() []string {
	var out []string
	for _, s := range scenarios.All() {
		out = append(out, s.Name)
	}
	return out
}

// Run builds fedmesh's binaries, runs the chosen scenarios one after another and writes the report. A failing
// scenario is recorded in the report with its error and the others still run; Run's error is for what stops the
// whole run.
func Run(ctx context.Context, opts Options) (*suite.Report, []string, error) {
	var chosen []suite.Scenario
	for _, s := range scenarios.All() {
		if len(opts.Scenarios) == 0 || slices.Contains(opts.Scenarios, s.Name) {
			chosen = append(chosen, s)
		}
	}
	if len(chosen) == 0 || (len(opts.Scenarios) > 0 && len(chosen) != len(opts.Scenarios)) {
		return nil, nil, fmt.Errorf("scenarios %v: known are %s", opts.Scenarios, strings.Join(Names(), ", "))
	}
	// Fail now rather than after an hour of measuring.
	if err := os.MkdirAll(opts.OutDir, 0o755); err != nil {
		return nil, nil, err
	}
	binDir, err := os.MkdirTemp("", "fedmesh-bench-bin-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(binDir)
	opts.Logf("building manager, proxy, federator and the stand-ins for a shard replica and a bare hop")
	if err := fedrun.Build(fedrun.SourceRoot(), binDir, "./test/bench/replica", "./test/bench/barehop"); err != nil {
		return nil, nil, err
	}
	env := &suite.Env{Scale: opts.Scale, Reps: opts.Reps, Variants: opts.Variants, BinDir: binDir, ProfileDir: opts.ProfileDir, Logf: opts.Logf}
	rep := &suite.Report{Started: time.Now(), Machine: describeMachine(opts.OutDir), Command: opts.Command}
	for _, s := range chosen {
		opts.Logf("scenario %s (scale %s, %d repetitions)", s.Name, opts.Scale, opts.Reps)
		res := &suite.Result{Scenario: s.Name, Description: s.Description, Scale: opts.Scale, Reps: opts.Reps,
			Variants: opts.Variants, Started: time.Now(), Commit: rep.Machine.Commit, CPU: rep.Machine.CPU,
			Command: fmt.Sprintf("go run ./test/bench -scenario %s -scale %s -reps %d", s.Name, opts.Scale, opts.Reps)}
		if len(opts.Variants) > 0 {
			res.Command += " -variants " + strings.Join(opts.Variants, ",")
		}
		start := time.Now()
		if err := s.Run(ctx, env, res); err != nil {
			res.Error = err.Error()
			opts.Logf("scenario %s failed: %v", s.Name, err)
		}
		res.Duration = time.Since(start).Seconds()
		rep.Results = append(rep.Results, res)
		if ctx.Err() != nil {
			break
		}
	}
	// A run of some scenarios updates the report of earlier runs instead of replacing it.
	if earlier, err := suite.ReadReport(filepath.Join(opts.OutDir, "report.json")); err == nil && len(opts.Scenarios) > 0 {
		rep.Merge(earlier, Names())
	}
	files, err := rep.Write(opts.OutDir)
	return rep, files, err
}

// describeMachine names the machine, the versions and the commit measured; outDir, where reports of earlier runs
// are rewritten, does not make the commit dirty.
func describeMachine(outDir string) suite.Machine {
	m := suite.Machine{Cores: runtime.NumCPU(), Go: runtime.Version(), Components: map[string]string{}}
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var kb float64
			if _, err := fmt.Sscanf(sc.Text(), "MemTotal: %g kB", &kb); err == nil {
				m.MemoryGiB = fmt.Sprintf("%.1f", kb/(1<<20))
			}
		}
		f.Close()
	}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if name, ok := strings.CutPrefix(line, "model name"); ok {
				m.CPU = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(name), ":"))
				break
			}
		}
	}
	m.Commit = commit(fedrun.SourceRoot(), outDir)
	bin := cluster.DefaultBinDir()
	for name, args := range map[string][]string{"kube-apiserver": {"--version"}, "etcd": {"--version"}} {
		if out, err := exec.Command(bin+"/"+name, args...).Output(); err == nil {
			m.Components[name] = strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
		}
	}
	return m
}

// commit is the source tree's commit, with -dirty when a tracked file outside outDir differs from it.
func commit(root, outDir string) string {
	out, err := exec.Command("git", "-C", root, "describe", "--tags", "--always").Output()
	if err != nil {
		return ""
	}
	c := strings.TrimSpace(string(out))
	args := []string{"-C", root, "status", "--porcelain", "--untracked-files=no", "--", "."}
	if abs, err := filepath.Abs(outDir); err == nil {
		args = append(args, ":(exclude)"+abs)
	}
	if changed, err := exec.Command("git", args...).Output(); err != nil || len(bytes.TrimSpace(changed)) > 0 {
		c += "-dirty"
	}
	return c
}
