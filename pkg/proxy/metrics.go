package proxy

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fedmesh/fedmesh/pkg/breaker"
)

// metrics are the proxy's Prometheus series. "cluster" is "@host" for the API server the proxy fronts directly.
type metrics struct {
	requests     *prometheus.CounterVec
	listWatches  *prometheus.CounterVec
	fenced       *prometheus.CounterVec
	rejected     *prometheus.CounterVec
	delayed      *prometheus.CounterVec
	breakerState *prometheus.GaugeVec
	breakerTrips *prometheus.CounterVec
	watchEvents  *prometheus.CounterVec
	endedWatches prometheus.Counter
	config       *prometheus.GaugeVec
	epoch        prometheus.Gauge
	ownedShare   prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fedmesh_proxy_requests_total", Help: "Requests answered, by verb, resource, HTTP code and upstream cluster.",
		}, []string{"verb", "resource", "code", "cluster"}),
		listWatches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fedmesh_proxy_list_watch_total", Help: "Lists and watches of sharded resources, by the filter that narrowed them (server, label, client, none).",
		}, []string{"verb", "resource", "filter", "cluster"}),
		fenced: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fedmesh_proxy_fenced_writes_total", Help: "Writes refused because another shard owns the namespace.",
		}, []string{"resource", "cluster"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fedmesh_proxy_policy_rejections_total", Help: "Requests refused by the traffic policy, by cause (ratelimit, inflight, breaker, deny, fault) and rule.",
		}, []string{"cause", "rule", "cluster"}),
		delayed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fedmesh_proxy_policy_delays_total", Help: "Requests held by the traffic policy (rate-limit waits, injected delays).",
		}, []string{"cause", "rule", "cluster"}),
		breakerState: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "fedmesh_proxy_breaker_state", Help: "Circuit breaker state per rule and upstream cluster: 0 closed, 1 half-open, 2 open.",
		}, []string{"rule", "cluster"}),
		// A counter as well as the gauge: a breaker that opens and closes between two scrapes is still counted,
		// which the canary analysis (spec.canary.analysis.maxBreakerTrips) needs.
		breakerTrips: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fedmesh_proxy_breaker_trips_total", Help: "Circuit breaker transitions to open, per rule and upstream cluster.",
		}, []string{"rule", "cluster"}),
		watchEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fedmesh_proxy_watch_events_total", Help: "Watch events the proxy filtered, by result (relayed, dropped).",
		}, []string{"resource", "result", "cluster"}),
		endedWatches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fedmesh_proxy_watches_ended_total", Help: "Watches ended because the shard's ownership changed, so the operator relists.",
		}),
		config: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "fedmesh_proxy_config_info", Help: "The configuration version being served, per document kind (1 for the current version).",
		}, []string{"kind", "version"}),
		epoch: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "fedmesh_proxy_ownership_epoch", Help: "Epoch of the ownership being served.",
		}),
		ownedShare: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "fedmesh_proxy_owned_fraction", Help: "Fraction of the namespace-hash space this shard owns.",
		}),
	}
	reg.MustRegister(m.requests, m.listWatches, m.fenced, m.rejected, m.delayed, m.breakerState, m.breakerTrips, m.watchEvents,
		m.endedWatches, m.config, m.epoch, m.ownedShare)
	return m
}

// observer feeds the traffic policy's events into the metrics.
func (m *metrics) observer() breaker.Observer {
	return breaker.ObserverFuncs{
		RejectedFunc: func(r breaker.Request, d breaker.Decision) {
			m.rejected.WithLabelValues(string(d.Cause), d.Rule, r.Cluster).Inc()
		},
		DelayedFunc: func(r breaker.Request, cause breaker.Cause, rule string, _ time.Duration) {
			m.delayed.WithLabelValues(string(cause), rule, r.Cluster).Inc()
		},
		BreakerChangedFunc: func(rule, cluster string, _, to breaker.BreakerState) {
			m.breakerState.WithLabelValues(rule, cluster).Set(float64(to))
			if to == breaker.BreakerOpen {
				m.breakerTrips.WithLabelValues(rule, cluster).Inc()
			}
		},
	}
}

// setConfig records the versions being served.
func (m *metrics) setConfig(kind, old, version string) {
	if old != "" {
		m.config.DeleteLabelValues(kind, old)
	}
	if version != "" {
		m.config.WithLabelValues(kind, version).Set(1)
	}
}
