package proxy

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/fedmesh/fedmesh/pkg/breaker"
)

// Every transition to open counts as a trip, including one from half-open; the gauge shows only the last state.
func TestBreakerTripsCountTransitionsToOpen(t *testing.T) {
	m := newMetrics(prometheus.NewRegistry())
	obs := m.observer()
	for _, tr := range [][2]breaker.BreakerState{
		{breaker.BreakerClosed, breaker.BreakerOpen},
		{breaker.BreakerOpen, breaker.BreakerHalfOpen},
		{breaker.BreakerHalfOpen, breaker.BreakerOpen},
		{breaker.BreakerOpen, breaker.BreakerHalfOpen},
		{breaker.BreakerHalfOpen, breaker.BreakerClosed},
	} {
		obs.BreakerChanged("members", "member1", tr[0], tr[1])
	}
	obs.BreakerChanged("other", "member2", breaker.BreakerClosed, breaker.BreakerOpen)
	if got := value(t, m.breakerTrips.WithLabelValues("members", "member1")); got != 2 {
		t.Errorf("trips of members/member1 = %v, want 2", got)
	}
	if got := value(t, m.breakerTrips.WithLabelValues("other", "member2")); got != 1 {
		t.Errorf("trips of other/member2 = %v, want 1", got)
	}
	if got := value(t, m.breakerState.WithLabelValues("members", "member1")); got != 0 {
		t.Errorf("state of members/member1 = %v, want 0 (closed)", got)
	}
}

// value reads a counter's or a gauge's current value.
func value(t *testing.T, c prometheus.Metric) float64 {
	t.Helper()
	var out dto.Metric
	if err := c.Write(&out); err != nil {
		t.Fatal(err)
	}
	if out.Counter != nil {
		return out.Counter.GetValue()
	}
	return out.Gauge.GetValue()
}
