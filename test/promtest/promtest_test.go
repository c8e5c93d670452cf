package promtest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestSum(t *testing.T) {
	reg := prometheus.NewRegistry()
	reconciles := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "reconcile_total"}, []string{"controller", "result"})
	depth := prometheus.NewGauge(prometheus.GaugeOpts{Name: "depth"})
	reg.MustRegister(reconciles, depth)
	reconciles.WithLabelValues("scheduler", "success").Add(3)
	reconciles.WithLabelValues("scheduler", "error").Add(1)
	reconciles.WithLabelValues("binding", "success").Add(5)
	depth.Set(7)
	for _, tc := range []struct {
		name      string
		family    string
		match     map[string]string
		want      float64
		wantFound bool
	}{
		{"one label: every result of a controller", "reconcile_total", map[string]string{"controller": "scheduler"}, 4, true},
		{"two labels", "reconcile_total", map[string]string{"controller": "scheduler", "result": "error"}, 1, true},
		{"no match: all", "reconcile_total", nil, 9, true},
		{"a gauge", "depth", nil, 7, true},
		{"no such label value", "reconcile_total", map[string]string{"controller": "detector"}, 0, false},
		{"no such family", "absent", nil, 0, false},
	} {
		got, found, err := Sum(reg, tc.family, tc.match)
		if err != nil || got != tc.want || found != tc.wantFound {
			t.Errorf("%s: Sum = %v, %v, %v; want %v, %v", tc.name, got, found, err, tc.want, tc.wantFound)
		}
	}
}
