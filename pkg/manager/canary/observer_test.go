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
	fp.set(100, 10, 1) // trips before the step do not count
	m, err := o.Observe(ctx, "ops/op", start, []corev1.Pod{pod})
	if err != nil || m != (Measurement{Ready: 1, Total: 1}) {
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

func TestRolledOut(t *testing.T) {
	pod := func(images ...string) corev1.Pod {
		var p corev1.Pod
		for i, img := range images {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: fmt.Sprint("c", i), Image: img})
		}
		return p
	}
	canary := []corev1.Pod{pod("op:v2", "proxy:v1")}
	if RolledOut([]corev1.Pod{pod("op:v2", "proxy:v1"), pod("op:v1", "proxy:v1")}, canary) {
		t.Error("one stable pod still runs v1")
	}
	if !RolledOut([]corev1.Pod{pod("op:v2", "proxy:v1"), pod("op:v2", "proxy:v1")}, canary) {
		t.Error("every stable pod runs v2")
	}
	if RolledOut(nil, canary) || RolledOut(canary, nil) {
		t.Error("no pods: not rolled out")
	}
}
