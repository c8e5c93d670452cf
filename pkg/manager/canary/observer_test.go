package canary

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"

	"github.com/fedmesh/fedmesh/pkg/webhook/inject"
)

func TestParseMetrics(t *testing.T) {
	text := `# HELP fedmesh_proxy_requests_total Requests answered.
# TYPE fedmesh_proxy_requests_total counter
fedmesh_proxy_requests_total{cluster="",code="200",resource="configmaps",verb="create"} 7
fedmesh_proxy_requests_total{cluster="",code="503",resource="config\"maps",verb="get"} 2
fedmesh_proxy_breaker_trips_total{cluster="a",rule="r"} 2
other_metric 5
`
	got, err := parseMetrics(strings.NewReader(text), "fedmesh_proxy_requests_total", "fedmesh_proxy_breaker_trips_total")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].value != 7 || got[1].labels["code"] != "503" || got[1].labels["resource"] != `config"maps` ||
		got[2].series != `fedmesh_proxy_breaker_trips_total{cluster="a",rule="r"}` || got[2].value != 2 {
		t.Fatalf("parsed %+v", got)
	}
}

// fakeProxy serves /metrics with counters the test sets.
type fakeProxy struct {
	mu                sync.Mutex
	ok, failed, trips int
}

func (f *fakeProxy) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fmt.Fprintf(w, "fedmesh_proxy_requests_total{code=\"200\"} %d\nfedmesh_proxy_requests_total{code=\"500\"} %d\nfedmesh_proxy_requests_total{code=\"429\"} 0\n", f.ok, f.failed)
	// Two breakers: trips of every series add up.
	fmt.Fprintf(w, "fedmesh_proxy_breaker_trips_total{cluster=\"\",rule=\"r\"} %d\n", f.trips)
	fmt.Fprintf(w, "fedmesh_proxy_breaker_trips_total{cluster=\"m1\",rule=\"r\"} %d\n", f.trips)
}

func (f *fakeProxy) set(ok, failed, trips int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ok, f.failed, f.trips = ok, failed, trips
}

func TestObserverCountsFromTheStepStart(t *testing.T) {
	fp := &fakeProxy{}
	srv := httptest.NewServer(fp)
	defer srv.Close()
	start := time.Now()
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "c", UID: "u1", CreationTimestamp: metav1.NewTime(start.Add(-time.Hour)),
		Annotations: map[string]string{MetricsAnnotation: strings.TrimPrefix(srv.URL, "http://")}},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{RestartCount: 4}}}}
	var o Observer
	ctx := context.Background()
	if _, err := o.Observe(ctx, "ops/op", time.Time{}, []corev1.Pod{pod}); err != nil { // the step hands over
		t.Fatal(err)
	}
	fp.set(100, 10, 1) // trips before the step do not count
	m, err := o.Observe(ctx, "ops/op", start, []corev1.Pod{pod})
	if err != nil || m != (Measurement{Ready: 1, Total: 1, Unmeasured: 1}) { // a baseline measures nothing yet
		t.Fatalf("baseline: %+v, %v", m, err)
	}
	fp.set(110, 12, 3) // each breaker opened twice more, whatever its state now
	pod.Status.ContainerStatuses[0].RestartCount = 5
	if m, _ = o.Observe(ctx, "ops/op", start, []corev1.Pod{pod}); m != (Measurement{Requests: 12, Errors: 2, BreakerTrips: 4, Restarts: 1, Ready: 1, Total: 1}) {
		t.Fatalf("after: %+v", m)
	}
	fp.set(3, 1, 1) // the proxy restarted: its counters start again
	if m, _ = o.Observe(ctx, "ops/op", start, []corev1.Pod{pod}); m.Requests != 16 || m.Errors != 3 || m.BreakerTrips != 6 {
		t.Fatalf("after a proxy restart: %+v", m)
	}
	// A new step starts new baselines.
	if m, _ = o.Observe(ctx, "ops/op", start.Add(time.Minute), []corev1.Pod{pod}); m.Requests != 0 || m.Restarts != 0 {
		t.Fatalf("new step: %+v", m)
	}
	// A pod born in the step counts from zero.
	born := pod
	born.UID, born.CreationTimestamp = "u2", metav1.NewTime(start.Add(2*time.Minute))
	born.Annotations = nil
	if m, _ = o.Observe(ctx, "ops/op", start.Add(time.Minute), []corev1.Pod{pod, born}); m.Restarts != 5 || m.Total != 2 {
		t.Fatalf("a pod born in the step: %+v", m)
	}
}

func TestMetricsAddress(t *testing.T) {
	proxy := func(ports ...corev1.ContainerPort) corev1.Container {
		return corev1.Container{Name: inject.ProxyContainerName, Ports: ports}
	}
	probes := corev1.ContainerPort{Name: inject.ProbePortName, ContainerPort: 5444}
	for _, tc := range []struct {
		name    string
		pod     corev1.Pod
		want    string
		wantErr string
	}{
		{"injected: pod IP and probe port",
			corev1.Pod{Spec: corev1.PodSpec{InitContainers: []corev1.Container{proxy(probes)}},
				Status: corev1.PodStatus{PodIP: "10.0.0.7"}}, "10.0.0.7:5444", ""},
		{"IPv6", corev1.Pod{Spec: corev1.PodSpec{InitContainers: []corev1.Container{proxy(probes)}},
			Status: corev1.PodStatus{PodIP: "fd00::7"}}, "[fd00::7]:5444", ""},
		{"proxy as a plain container", corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "op"}, proxy(probes)}},
			Status: corev1.PodStatus{PodIP: "10.0.0.7"}}, "10.0.0.7:5444", ""},
		{"the annotation overrides", corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{MetricsAnnotation: "127.0.0.1:9"}},
			Spec:       corev1.PodSpec{InitContainers: []corev1.Container{proxy(probes)}},
			Status:     corev1.PodStatus{PodIP: "10.0.0.7"}}, "127.0.0.1:9", ""},
		{"no IP yet", corev1.Pod{Spec: corev1.PodSpec{InitContainers: []corev1.Container{proxy(probes)}}}, "", "no pod IP"},
		{"not injected", corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "op"}}},
			Status: corev1.PodStatus{PodIP: "10.0.0.7"}}, "", "no container fedmesh-proxy with port fedmesh-probes"},
		{"proxy without the probe port", corev1.Pod{Spec: corev1.PodSpec{InitContainers: []corev1.Container{
			proxy(corev1.ContainerPort{Name: "other", ContainerPort: 1})}}, Status: corev1.PodStatus{PodIP: "10.0.0.7"}},
			"", "no container fedmesh-proxy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := MetricsAddress(&tc.pod)
			if got != tc.want || (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("MetricsAddress = %q, %v; want %q, error %q", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// TestObserverCountsUnreadPods: a canary pod whose metrics were not read in the step (no address, a failed scrape,
// only a baseline) is Unmeasured, and named in the error.
func TestObserverCountsUnreadPods(t *testing.T) {
	fp := &fakeProxy{}
	up := httptest.NewServer(fp)
	defer up.Close()
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	defer broken.Close()
	start := time.Now()
	pod := func(name, addr string) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: ktypes.UID(name), CreationTimestamp: metav1.NewTime(start.Add(-time.Hour))}}
		if addr != "" {
			p.Annotations = map[string]string{MetricsAnnotation: strings.TrimPrefix(addr, "http://")}
		}
		return p
	}
	pods := []corev1.Pod{pod("read", up.URL), pod("broken", broken.URL), pod("noaddr", "")}
	var o Observer
	ctx := context.Background()
	m, err := o.Observe(ctx, "ops/op", start, pods)
	if m.Unmeasured != 3 || err == nil {
		t.Fatalf("first observation (baselines): %+v, %v; want 3 unmeasured", m, err)
	}
	m, err = o.Observe(ctx, "ops/op", start, pods)
	if m.Unmeasured != 2 || err == nil || !strings.Contains(err.Error(), "pod broken: GET") ||
		!strings.Contains(err.Error(), "pod noaddr: no container fedmesh-proxy") {
		t.Fatalf("second observation: %+v, %v; want broken and noaddr unmeasured", m, err)
	}
	// A zero step start measures readiness only: there is no window to have missed.
	if m, err = o.Observe(ctx, "ops/op", time.Time{}, pods); m.Unmeasured != 0 || err != nil {
		t.Fatalf("no window: %+v, %v", m, err)
	}
}

func TestRunImages(t *testing.T) {
	pod := func(images ...string) corev1.Pod {
		var p corev1.Pod
		for i, img := range images {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: fmt.Sprint("c", i), Image: img})
		}
		return p
	}
	canary := CommonImages([]corev1.Pod{pod("op:v2", "proxy:v1")})
	if RunImages([]corev1.Pod{pod("op:v2", "proxy:v1"), pod("op:v1", "proxy:v1")}, canary) {
		t.Error("one stable pod still runs v1")
	}
	if !RunImages([]corev1.Pod{pod("op:v2", "proxy:v1"), pod("op:v2", "proxy:v1")}, canary) {
		t.Error("every stable pod runs v2")
	}
	if RunImages(nil, canary) || RunImages([]corev1.Pod{pod("op:v2", "proxy:v1")}, nil) {
		t.Error("no pods or no images: not rolled out")
	}
	if CommonImages([]corev1.Pod{pod("op:v2"), pod("op:v1")}) != nil || CommonImages(nil) != nil {
		t.Error("pods that differ, or none, have no common images")
	}
}
