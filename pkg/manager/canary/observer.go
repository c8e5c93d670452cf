package canary

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	ktypes "k8s.io/apimachinery/pkg/types"

	"github.com/fedmesh/fedmesh/pkg/webhook/inject"
)

// MetricsAnnotation on a canary pod overrides where its proxy's /metrics is: "host:port". Without it, MetricsAddress
// finds it from the pod itself.
const MetricsAnnotation = "fedmesh.io/proxy-metrics"

// Measurement is what the canary pods did since the step began: the counters of pkg/canary's Observation.
type Measurement struct {
	// Requests and Errors are API requests through the canary proxies and the failed ones (5xx and 429).
	Requests, Errors int
	// BreakerTrips counts circuit breakers opening (the proxies' fedmesh_proxy_breaker_trips_total).
	BreakerTrips int
	// Restarts counts container restarts of the canary pods.
	Restarts int
	// Ready and Total count the canary pods (now, not since the step began).
	Ready, Total int
	// Unmeasured counts the canary pods whose proxy metrics this step has not read: no address, a failed scrape,
	// or only a baseline so far. Their requests, errors and trips are unknown, not zero.
	Unmeasured int
	// MeasuredSince is when this Observer took its baselines, if it did not see the step begin (a manager
	// restarted mid-step): the counts run from then, not from the step's start (pkg/canary's
	// Observation.MeasuredSince). Zero when they run from the step's start.
	MeasuredSince time.Time
}

// MetricsAddress is the "host:port" of the injected proxy's /metrics on pod: MetricsAnnotation if set, else the
// pod's IP and the proxy container's probe port (inject.ProbePortName), where the proxy listens on every interface.
func MetricsAddress(p *corev1.Pod) (string, error) {
	if addr := p.Annotations[MetricsAnnotation]; addr != "" {
		return addr, nil
	}
	var port int32
	for _, c := range slices.Concat(p.Spec.InitContainers, p.Spec.Containers) {
		if c.Name != inject.ProxyContainerName {
			continue
		}
		for _, cp := range c.Ports {
			if cp.Name == inject.ProbePortName {
				port = cp.ContainerPort
			}
		}
	}
	if port == 0 {
		return "", fmt.Errorf("no container %s with port %s (not injected?) and no annotation %s",
			inject.ProxyContainerName, inject.ProbePortName, MetricsAnnotation)
	}
	if p.Status.PodIP == "" {
		return "", fmt.Errorf("no pod IP yet")
	}
	return net.JoinHostPort(p.Status.PodIP, strconv.Itoa(int(port))), nil
}

// Observer measures canary pods. The zero Observer is ready to use; it is safe for concurrent use.
type Observer struct {
	// HTTPClient scrapes the proxies; nil means a client with a 2s timeout.
	HTTPClient *http.Client

	mu      sync.Mutex
	windows map[string]*window
}

// window is one step's baselines and running totals, per pod. A window with a zero start marks a rollout seen
// between steps, so that the next step's window is known to begin with the step.
type window struct {
	start time.Time
	// since is when the baselines were taken if the Observer met the step already under way; zero otherwise.
	since time.Time
	pods  map[ktypes.UID]*podCounters
}

// podCounters follows one pod: the last raw values seen and what accumulated since the baseline. A raw value that
// goes down (a restarted proxy) counts from zero again.
type podCounters struct {
	requests, errors, restarts, trips counter
}

type counter struct {
	last, acc float64
	seen      bool
}

func (c *counter) observe(v float64, fromZero bool) {
	switch {
	case !c.seen && !fromZero:
		c.last = v // baseline: what was there when the step began is not counted
	case !c.seen, v < c.last:
		c.acc += v
	default:
		c.acc += v - c.last
	}
	c.last, c.seen = v, true
}

// Observe measures pods, the canary pods of the ShardingConfig key, for the step that began at stepStart. A zero
// stepStart (a step still handing over) measures readiness only and forgets the baselines. A new stepStart starts
// new baselines. If the Observer meets a step already under way (it has seen nothing of the key since it was made
// or told to Forget it: a restarted manager), the counts run from its first measurement (Measurement.MeasuredSince),
// and a container whose last termination finished after stepStart counts as at least one restart in the step.
// Proxies whose metrics cannot be read are skipped, counted in Measurement.Unmeasured and reported in the error,
// which is informational: the Measurement is still usable.
func (o *Observer) Observe(ctx context.Context, key string, stepStart time.Time, pods []corev1.Pod) (Measurement, error) {
	var m Measurement
	for _, p := range pods {
		m.Total++
		if podReady(&p) {
			m.Ready++
		}
	}
	if stepStart.IsZero() {
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.windows == nil {
			o.windows = map[string]*window{}
		}
		o.windows[key] = &window{} // no baselines, but the next step is seen to begin
		return m, nil
	}
	type scraped struct {
		samples []sample
		err     error
	}
	metrics := make(map[ktypes.UID]scraped, len(pods))
	for _, p := range pods {
		addr, err := MetricsAddress(&p)
		var s []sample
		if err == nil {
			s, err = o.scrape(ctx, addr)
		}
		metrics[p.UID] = scraped{s, err}
	}

	o.mu.Lock()
	defer o.mu.Unlock()
	if o.windows == nil {
		o.windows = map[string]*window{}
	}
	w := o.windows[key]
	if w == nil || !w.start.Equal(stepStart) {
		met := w == nil // nothing seen of the rollout before: the step is already under way
		w = &window{start: stepStart, pods: map[ktypes.UID]*podCounters{}}
		if met {
			w.since = time.Now()
		}
		o.windows[key] = w
	}
	m.MeasuredSince = w.since
	var errs []string
	for _, p := range pods {
		pc := w.pods[p.UID]
		if pc == nil {
			pc = &podCounters{}
			w.pods[p.UID] = pc
		}
		bornInStep := p.CreationTimestamp.After(stepStart)
		baseline := !pc.restarts.seen && !bornInStep
		pc.restarts.observe(float64(restarts(&p)), bornInStep)
		if baseline && !w.since.IsZero() {
			// A baseline taken late hides the restarts before it; those that finished in the step show.
			pc.restarts.acc += float64(terminatedSince(&p, stepStart))
		}
		s := metrics[p.UID]
		if s.err != nil {
			m.Unmeasured++
			errs = append(errs, fmt.Sprintf("pod %s: %v", p.Name, s.err))
			continue
		}
		if !pc.requests.seen && !bornInStep {
			m.Unmeasured++ // this reading is the baseline: nothing is compared yet
		}
		var requests, failed, trips float64
		for _, smp := range s.samples {
			switch smp.name {
			case "fedmesh_proxy_requests_total":
				requests += smp.value
				if code := smp.labels["code"]; strings.HasPrefix(code, "5") || code == "429" {
					failed += smp.value
				}
			case "fedmesh_proxy_breaker_trips_total":
				trips += smp.value
			}
		}
		pc.requests.observe(requests, bornInStep)
		pc.errors.observe(failed, bornInStep)
		pc.trips.observe(trips, bornInStep)
	}
	// Pods gone since the step began still count: a canary pod that failed and was replaced failed in this step.
	for _, pc := range w.pods {
		m.Requests += int(pc.requests.acc)
		m.Errors += int(pc.errors.acc)
		m.Restarts += int(pc.restarts.acc)
		m.BreakerTrips += int(pc.trips.acc)
	}
	if len(errs) > 0 {
		return m, fmt.Errorf("canary proxy metrics: %s", strings.Join(errs, "; "))
	}
	return m, nil
}

// Forget drops the baselines of the ShardingConfig key.
func (o *Observer) Forget(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.windows, key)
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, cs := range p.Status.ContainerStatuses {
		n += cs.RestartCount
	}
	for _, cs := range p.Status.InitContainerStatuses {
		n += cs.RestartCount
	}
	return n
}

// terminatedSince counts the containers (init containers included) of p whose last termination finished after t.
func terminatedSince(p *corev1.Pod, t time.Time) int {
	n := 0
	for _, cs := range slices.Concat(p.Status.ContainerStatuses, p.Status.InitContainerStatuses) {
		if term := cs.LastTerminationState.Terminated; term != nil && term.FinishedAt.After(t) {
			n++
		}
	}
	return n
}

func (o *Observer) scrape(ctx context.Context, addr string) ([]sample, error) {
	client := o.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: 2 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s/metrics: %s", addr, resp.Status)
	}
	return parseMetrics(resp.Body, "fedmesh_proxy_requests_total", "fedmesh_proxy_breaker_trips_total")
}

// sample is one line of the Prometheus text format.
type sample struct {
	name   string
	series string // the name with its labels, as written
	labels map[string]string
	value  float64
}

// parseMetrics reads the samples of the named metrics from the Prometheus text format.
func parseMetrics(r io.Reader, names ...string) ([]sample, error) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var out []sample
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		end := strings.IndexAny(line, "{ ")
		if end < 0 || !want[line[:end]] {
			continue
		}
		s := sample{name: line[:end], labels: map[string]string{}}
		rest := line[end:]
		if rest[0] == '{' {
			n, err := parseLabels(rest, s.labels)
			if err != nil {
				return nil, fmt.Errorf("metric line %q: %w", line, err)
			}
			s.series, rest = line[:end+n], rest[n:]
		} else {
			s.series = s.name
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return nil, fmt.Errorf("metric line %q: no value", line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("metric line %q: %w", line, err)
		}
		s.value = v
		out = append(out, s)
	}
	return out, sc.Err()
}

// parseLabels reads `{a="x",b="y"}` from the start of s into labels and returns its length.
func parseLabels(s string, labels map[string]string) (int, error) {
	i := 1
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == ',') {
			i++
		}
		if i < len(s) && s[i] == '}' {
			return i + 1, nil
		}
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 || i+eq+1 >= len(s) || s[i+eq+1] != '"' {
			return 0, fmt.Errorf("bad labels")
		}
		name := strings.TrimSpace(s[i : i+eq])
		i += eq + 2
		var b strings.Builder
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
				switch s[i] {
				case 'n':
					b.WriteByte('\n')
				default:
					b.WriteByte(s[i])
				}
				continue
			}
			b.WriteByte(s[i])
		}
		if i >= len(s) {
			return 0, fmt.Errorf("unterminated label value")
		}
		labels[name] = b.String()
		i++
	}
}
