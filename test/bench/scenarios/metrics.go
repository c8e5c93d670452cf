package scenarios

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/fedmesh/fedmesh/test/bench/suite"
	"github.com/fedmesh/fedmesh/test/cluster"
	"github.com/fedmesh/fedmesh/test/fedrun"
	"github.com/fedmesh/fedmesh/test/promtest"
)

// tally is amounts so far by name: an API server's requests, processes' CPU time.
type tally map[string]float64

// readRequests is an API server's requests answered so far (cluster.Requests), with cfg's (admin) credentials.
func readRequests(ctx context.Context, cfg *rest.Config) (tally, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	counts, err := cluster.Requests(ctx, cs)
	return tally(counts), err
}

// machineCPU is the CPU time, in ms, that the benchmark and every process it started have used so far, by
// command name.
func machineCPU() tally {
	out := tally{}
	for name, sec := range suite.ChildCPU() {
		out[name] = sec * 1000
	}
	out["bench"] = cpuOf(os.Getpid()) * 1000
	return out
}

// since is what was added after before.
func (c tally) since(before tally) tally {
	out := tally{}
	for k, v := range c {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

func (c tally) total() float64 {
	var sum float64
	for _, v := range c {
		sum += v
	}
	return sum
}

// per describes the counts divided by n, largest first, for a note or the log.
func (c tally) per(n int) string {
	keys := slices.SortedFunc(maps.Keys(c), func(a, b string) int {
		if c[a] != c[b] {
			if c[a] > c[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.3g", k, c[k]/float64(n)))
	}
	return strings.Join(parts, ", ")
}

// families are the metric families a /metrics endpoint serves, by name.
type families map[string]*dto.MetricFamily

// scrape reads the /metrics of addr (host:port).
func scrape(ctx context.Context, addr string) (families, error) {
	return promtest.Scrape(ctx, addr)
}

// sum adds up the counter, gauge or untyped values of family name whose labels include every pair of match.
func (f families) sum(name string, match map[string]string) float64 {
	total, _ := promtest.Match(f[name], match)
	return total
}

// federatorCounter is counter name summed over every federator of run so far, keyed by the values of labels joined
// with spaces; none for the floor (run nil).
func federatorCounter(ctx context.Context, run *fedrun.Run, name string, labels ...string) (tally, error) {
	out := tally{}
	if run == nil {
		return out, nil
	}
	for i := range run.Federators() {
		fams, err := scrape(ctx, run.FederatorMetrics(i))
		if err != nil {
			return nil, err
		}
		for _, m := range fams[name].GetMetric() {
			values := make([]string, len(labels))
			for _, l := range m.GetLabel() {
				if j := slices.Index(labels, l.GetName()); j >= 0 {
					values[j] = l.GetValue()
				}
			}
			out[strings.Join(values, " ")] += m.GetCounter().GetValue()
		}
	}
	return out, nil
}

// federatorReconciles is the reconciles of every federator of run so far, by controller.
func federatorReconciles(ctx context.Context, run *fedrun.Run) (tally, error) {
	return federatorCounter(ctx, run, "controller_runtime_reconcile_total", "controller")
}

// federatorApplies is the status applies of every federator of run so far, by stage (field manager) and kind.
func federatorApplies(ctx context.Context, run *fedrun.Run) (tally, error) {
	return federatorCounter(ctx, run, "fedmesh_federation_status_applies_total", "manager", "kind")
}

// histogram is the sum and count of a Prometheus histogram, over all its label sets.
type histogram struct{ sum, count float64 }

// scrapeHistogram reads histogram name from the /metrics of addr (host:port).
func scrapeHistogram(ctx context.Context, addr, name string) (histogram, error) {
	fams, err := scrape(ctx, addr)
	if err != nil {
		return histogram{}, err
	}
	var h histogram
	if fam := fams[name]; fam != nil {
		for _, m := range fam.GetMetric() {
			h.sum += m.GetHistogram().GetSampleSum()
			h.count += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return h, nil
}

// writes adds up the write requests (creates, updates, patches, applies, deletes), leaving out those of the
// resources in except.
func (c tally) writes(except ...string) float64 {
	var n float64
	for k, v := range c {
		fields := strings.Fields(k) // VERB resource[/subresource] [(code)]
		verb, resource := fields[0], fields[1]
		resource, _, _ = strings.Cut(resource, "/")
		switch verb {
		case "POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION":
			if !slices.Contains(except, resource) {
				n += v
			}
		}
	}
	return n
}
