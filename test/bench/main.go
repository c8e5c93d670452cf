// Command bench runs fedmesh's benchmark scenarios against real API servers on this machine and writes
// bench/report.md, bench/report.json and PNG plots.
//
//	go run ./test/bench                                  # every scenario, small scale, 3 repetitions
//	go run ./test/bench -scenario proxy-overhead -scale full
//	go run ./test/bench -scenario federation-throughput -scale full -variants floor,federator-unsharded
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/fedmesh/fedmesh/test/bench/runner"
	"github.com/fedmesh/fedmesh/test/bench/suite"
)

func main() {
	var opts runner.Options
	var scale, scenarios, variants string
	flag.StringVar(&scenarios, "scenario", "", "comma-separated scenarios to run; empty runs all: "+strings.Join(runner.Names(), ", "))
	flag.StringVar(&scale, "scale", "small", "object counts: tiny (seconds, CI), small (minutes, 2 cores) or full (the issue's numbers)")
	flag.IntVar(&opts.Reps, "reps", 3, "repetitions of every variant, interleaved")
	flag.StringVar(&variants, "variants", "", "comma-separated variants to run, the others and their comparisons left out (for a long scale); empty runs all")
	flag.StringVar(&opts.OutDir, "out", "bench", "directory of the report, its JSON and plots")
	flag.StringVar(&opts.ProfileDir, "profile", "", "directory to save CPU profiles of the federators, their proxies and the host kube-apiserver in while templates converge (federation-throughput), one file per process and 10 s, and a heap profile of each federator and proxy once they have converged; empty saves none")
	render := flag.String("render", "", "measure nothing: write the report and plots again from this report.json")
	flag.Parse()
	if *render != "" {
		if err := rerender(*render, opts.OutDir); err != nil {
			fail(err)
		}
		return
	}
	var err error
	if opts.Scale, err = suite.ParseScale(scale); err != nil {
		fail(err)
	}
	if scenarios != "" {
		opts.Scenarios = strings.Split(scenarios, ",")
	}
	if variants != "" {
		opts.Variants = strings.Split(variants, ",")
	}
	opts.Command = "go run ./test/bench " + strings.Join(os.Args[1:], " ")
	opts.Logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	ctrllog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, files, err := runner.Run(ctx, opts)
	for _, f := range files {
		fmt.Println("wrote", f)
	}
	if err != nil {
		fail(err)
	}
	for _, r := range rep.Results {
		if r.Error != "" {
			fail(fmt.Errorf("scenario %s failed: %s", r.Scenario, r.Error))
		}
	}
}

// rerender writes the report of an earlier run again, e.g. after a change to how plots are drawn.
func rerender(jsonPath, outDir string) error {
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		return err
	}
	var rep suite.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		return fmt.Errorf("%s: %w", jsonPath, err)
	}
	files, err := rep.Write(outDir)
	for _, f := range files {
		fmt.Println("wrote", f)
	}
	return err
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}
