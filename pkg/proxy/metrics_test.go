package proxy

import (
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
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

// A GET is timed under its verb and cluster; a watch, whether asked as a list with watch=true or by the /watch/
// path, is counted but not timed: its duration is the watch's lifetime, not the proxy's latency.
func TestDurationObservesAnswersNotWatches(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("watch") == "true" || strings.HasPrefix(r.URL.Path, "/api/v1/watch/") {
			return // a watch that ends at once, without events
		}
		io.WriteString(w, `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web","namespace":"a"}}`)
	}))
	defer upstream.Close()
	p := newOwningProxy(t, upstream)
	for _, path := range []string{
		"/api/v1/namespaces/a/pods/web",
		"/api/v1/namespaces/a/pods?watch=true",
		"/api/v1/watch/namespaces/a/pods",
	} {
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
		}
	}
	if got := value(t, p.metrics.requests.WithLabelValues("watch", "pods", "200", HostCluster)); got != 2 {
		t.Errorf("watches counted = %v, want 2", got)
	}
	want := map[string]uint64{"cluster=" + HostCluster + " verb=get": 1}
	if got := observations(t, p.metrics.duration); !maps.Equal(got, want) {
		t.Errorf("durations observed = %v, want %v", got, want)
	}
}

// observations reads a histogram's sample count per series, keyed by its labels ("name=value", sorted by name).
func observations(t *testing.T, h *prometheus.HistogramVec) map[string]uint64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 16)
	h.Collect(ch)
	close(ch)
	out := map[string]uint64{}
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatal(err)
		}
		var labels []string
		for _, l := range d.GetLabel() {
			labels = append(labels, l.GetName()+"="+l.GetValue())
		}
		out[strings.Join(labels, " ")] = d.GetHistogram().GetSampleCount()
	}
	return out
}
