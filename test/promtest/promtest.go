package promtest

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/fedmesh/fedmesh/test/httpget"
)

// Scrape reads the metric families that http://addr/metrics serves, by name.
func Scrape(ctx context.Context, addr string) (map[string]*dto.MetricFamily, error) {
	body, err := httpget.Body(ctx, "http://"+addr+"/metrics")
	if err != nil {
		return nil, err
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("metrics of %s: %w", addr, err)
	}
	return fams, nil
}

// Match adds up the counter, gauge and untyped values of family's metrics whose labels include every pair of
// match (nil matches all); found says whether any did. A nil family matches nothing.
func Match(family *dto.MetricFamily, match map[string]string) (total float64, found bool) {
	for _, m := range family.GetMetric() {
		labels := map[string]string{}
		for _, p := range m.GetLabel() {
			labels[p.GetName()] = p.GetValue()
		}
		ok := true
		for k, v := range match {
			ok = ok && labels[k] == v
		}
		if ok {
			total += m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue()
			found = true
		}
	}
	return total, found
}

// Sum is Match over the family name that g gathers.
func Sum(g prometheus.Gatherer, name string, match map[string]string) (total float64, found bool, err error) {
	families, err := g.Gather()
	if err != nil {
		return 0, false, err
	}
	for _, f := range families {
		if f.GetName() == name {
			total, found = Match(f, match)
			return total, found, nil
		}
	}
	return 0, false, nil
}

// Reconciles is how many times the named controller has reconciled in this process (controller-runtime's
// registry).
func Reconciles(t testing.TB, controller string) float64 {
	t.Helper()
	n, _, err := Sum(ctrlmetrics.Registry, "controller_runtime_reconcile_total", map[string]string{"controller": controller})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
