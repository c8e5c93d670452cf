package proxy

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fedmesh/fedmesh/pkg/breaker"
	"github.com/fedmesh/fedmesh/pkg/proxy/config"
)

// metrics are the proxy's Prometheus series. "cluster" is "@host" for the API server the proxy fronts directly,
// "resource" is "@unknown" for a resource no API server is known to serve (resourceLabels).
type metrics struct {
	requests     *prometheus.CounterVec
	duration     *prometheus.HistogramVec
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
	// resources names the "resource" label's values.
	resources *resourceLabels
}

// durationBuckets run from 100µs, where a loopback hop to the API server answers, to a minute, the API server's
// default request timeout.
var durationBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fedmesh_proxy_requests_total", Help: "Requests answered, by verb (@other for a method neither the API server nor HTTP has), resource (@unknown for one no API server is known to serve), HTTP code and upstream cluster (@unknown for a name the proxy does not know).",
		}, []string{"verb", "resource", "code", "cluster"}),
		// No resource label: requests_total already says which resources are busy, and a resource label would
		// multiply every verb's and cluster's buckets by each resource the operator touches.
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "fedmesh_proxy_request_duration_seconds",
			Help: "Time the proxy took to answer a request, from its arrival to the end of the response, by verb (as in fedmesh_proxy_requests_total) and upstream cluster. " +
				"Long-running requests (watches, lists with watch=true, exec/attach/port-forward/proxy) are not observed: their duration is the connection's lifetime.",
			Buckets: durationBuckets,
		}, []string{"verb", "cluster"}),
		listWatches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fedmesh_proxy_list_watch_total", Help: "Lists and watches, by the filter that narrowed them (server, label, client, none), nothing when the shard sees none of what they ask, " +
				"expired when refused with 410 for resuming from a resourceVersion served under another view of the shard's namespaces.",
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
			Name: "fedmesh_proxy_watch_events_total", Help: "Watch events through the proxy, by result: relayed (passed on, bookmarks and errors included) or dropped (outside the shard; a Table row counts as one).",
		}, []string{"resource", "result", "cluster"}),
		endedWatches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fedmesh_proxy_watches_ended_total", Help: "Watches ended because the shard's ownership changed, so the operator relists.",
		}),
		config: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "fedmesh_proxy_config_info", Help: "The configuration version being served, per document kind (1 for the current version).",
		}, []string{"kind", "version"}),
		epoch: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "fedmesh_proxy_ownership_epoch", Help: "Epoch of the ownership being enforced; 0 while owning nothing (before the first contact with the manager, or out of contact for the ownership lease).",
		}),
		ownedShare: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "fedmesh_proxy_owned_fraction", Help: "Fraction of the namespace-hash space this shard owns; 0 while owning nothing (before the first contact with the manager, or out of contact for the ownership lease).",
		}),
		resources: newResourceLabels(),
	}
	reg.MustRegister(m.requests, m.duration, m.listWatches, m.fenced, m.rejected, m.delayed, m.breakerState, m.breakerTrips, m.watchEvents,
		m.endedWatches, m.config, m.epoch, m.ownedShare)
	return m
}

// answered records one answered request. Long-running ones count but get no duration: see the histogram's Help.
func (m *metrics) answered(rec *statusRecorder, known bool, took time.Duration) {
	req := rec.req
	cluster := clusterLabel(req.Cluster)
	if !known {
		cluster = UnknownCluster
	}
	resource := rec.resource
	if rec.status == 0 { // nothing written: the caller left, or is sent an empty 200 that says nothing of the resource
		resource = m.resources.of(req)
		m.countWaitingListWatch(rec, resource)
	}
	verb := verbLabel(req)
	m.requests.WithLabelValues(verb, resource, strconv.Itoa(rec.code()), cluster).Inc()
	if !req.longRunning() {
		m.duration.WithLabelValues(verb, cluster).Observe(took.Seconds())
	}
}

// countListWatch counts a list or watch by how it was narrowed (see the counter's Help). One of a resource not known
// yet is counted once its answer shows whether an API server serves it: a caller's first list of each resource
// would otherwise be @unknown.
func (m *metrics) countListWatch(rec *statusRecorder, how string) {
	resource, known := m.resources.lookup(rec.req)
	if !known && rec.status == 0 {
		rec.listWatch = how
		return
	}
	m.listWatches.WithLabelValues(rec.req.Verb, resource, how, clusterLabel(rec.req.Cluster)).Inc()
}

// countWaitingListWatch counts the list or watch waiting in rec for its answer, if any, under resource.
func (m *metrics) countWaitingListWatch(rec *statusRecorder, resource string) {
	if rec.listWatch == "" {
		return
	}
	m.listWatches.WithLabelValues(rec.req.Verb, resource, rec.listWatch, clusterLabel(rec.req.Cluster)).Inc()
	rec.listWatch = ""
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
		// The trips counter stays: it only grows, and the canary analysis reads its increase.
		BreakerRemovedFunc: func(rule, cluster string) {
			m.breakerState.DeleteLabelValues(rule, cluster)
		},
	}
}

// owning records the ownership being enforced; nil, owning nothing, shows as epoch 0 and no share.
func (m *metrics) owning(own *config.Ownership) {
	if own == nil {
		m.epoch.Set(0)
		m.ownedShare.Set(0)
		return
	}
	m.epoch.Set(float64(own.Epoch))
	m.ownedShare.Set(own.Owned().Fraction())
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
