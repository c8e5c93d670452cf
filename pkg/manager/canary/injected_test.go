package canary_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/canary"
	mcanary "github.com/fedmesh/fedmesh/pkg/manager/canary"
	"github.com/fedmesh/fedmesh/pkg/webhook/inject"
)

// injectedCanaryPod is a canary pod as the webhook makes it, running, ready, with podIP 127.0.0.1 and its proxy's
// probe port at port. It has no fedmesh.io/proxy-metrics annotation: the webhook sets none.
func injectedCanaryPod(t *testing.T, port int32) corev1.Pod {
	t.Helper()
	user := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "op-canary-0", UID: "c1",
		Labels:            map[string]string{inject.InjectLabel: "true", "fedmesh.io/track": "canary", inject.DefaultOrdinalLabel: "3"},
		Annotations:       map[string]string{inject.ShardingConfigAnnotation: "op"},
		CreationTimestamp: metav1.NewTime(time.Now().Add(-time.Hour))},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "op", Image: "operator:v2"}}}}
	pod, err := inject.Inject(user, inject.Options{Image: "proxy:v1", XDSAddress: "manager:18000", XDSCA: []byte("ca"), ProbePort: port})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.0.0.1",
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	return *pod
}

// TestInjectedCanaryErrorsFailTheStep: the errors an injected canary proxy reports are measured from the pod itself
// (its IP and its proxy's probe port), and a zero error bound fails the step instead of moving on.
func TestInjectedCanaryErrorsFailTheStep(t *testing.T) {
	var failed atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "fedmesh_proxy_requests_total{cluster=\"@host\",code=\"200\",resource=\"pods\",verb=\"get\"} 100\n")
		fmt.Fprintf(w, "fedmesh_proxy_requests_total{cluster=\"@host\",code=\"503\",resource=\"pods\",verb=\"get\"} %d\n", failed.Load())
	}))
	defer srv.Close()
	_, portStr, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)
	pod := injectedCanaryPod(t, int32(port))

	var o mcanary.Observer
	ctx := context.Background()
	stepStart := time.Now().Truncate(time.Second)
	if _, err := o.Observe(ctx, "ops/op", stepStart, []corev1.Pod{pod}); err != nil {
		t.Fatalf("baseline: %v", err)
	}
	failed.Store(100)
	m, err := o.Observe(ctx, "ops/op", stepStart, []corev1.Pod{pod})
	if err != nil || m.Requests != 100 || m.Errors != 100 || m.Unmeasured != 0 {
		t.Fatalf("the canary's proxy answered 100 errors of 100 requests since the baseline; measured %+v, err %v", m, err)
	}

	zero := int32(0)
	plan, err := canary.FromSpec(&v1alpha1.Canary{
		Steps:    []v1alpha1.CanaryStep{{Percent: 10, Pause: &metav1.Duration{Duration: time.Minute}}, {Percent: 50}},
		Analysis: &v1alpha1.CanaryAnalysis{MaxErrorRatePercent: &zero}})
	if err != nil {
		t.Fatal(err)
	}
	state := canary.State{Phase: canary.Analyzing, Step: 0, StepStart: stepStart, Canary: canary.PercentSet(10)}
	obs := canary.Observation{Owned: canary.PercentSet(10), Requests: m.Requests, Errors: m.Errors,
		Ready: m.Ready, Total: m.Total, Unmeasured: m.Unmeasured}
	next, res := canary.Step(plan, state, obs, stepStart.Add(time.Minute))
	if next.Phase != canary.Failed {
		t.Fatalf("maxErrorRatePercent 0 with 100 errors: phase %s, step %d, events %+v; want Failed", next.Phase, next.Step, res.Events)
	}
}

// TestUnreadCanaryHoldsTheStep: an injected canary pod whose proxy cannot be scraped is Unmeasured, and with an
// error-rate bound the step holds with a warning rather than passing on zero errors.
func TestUnreadCanaryHoldsTheStep(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	_, portStr, _ := net.SplitHostPort(srv.Listener.Addr().String())
	srv.Close() // nothing listens there now
	port, _ := strconv.Atoi(portStr)
	pod := injectedCanaryPod(t, int32(port))

	var o mcanary.Observer
	ctx := context.Background()
	stepStart := time.Now().Truncate(time.Second)
	o.Observe(ctx, "ops/op", stepStart, []corev1.Pod{pod})
	m, err := o.Observe(ctx, "ops/op", stepStart, []corev1.Pod{pod})
	if m.Unmeasured != 1 || err == nil {
		t.Fatalf("the canary's proxy cannot be reached; measured %+v, err %v; want it unmeasured", m, err)
	}

	two := int32(2)
	plan, err := canary.FromSpec(&v1alpha1.Canary{
		Steps:    []v1alpha1.CanaryStep{{Percent: 10, Pause: &metav1.Duration{Duration: time.Minute}}, {Percent: 50}},
		Analysis: &v1alpha1.CanaryAnalysis{MaxErrorRatePercent: &two}})
	if err != nil {
		t.Fatal(err)
	}
	state := canary.State{Phase: canary.Analyzing, Step: 0, StepStart: stepStart, Canary: canary.PercentSet(10)}
	obs := canary.Observation{Owned: canary.PercentSet(10), Requests: m.Requests, Errors: m.Errors,
		Ready: m.Ready, Total: m.Total, Unmeasured: m.Unmeasured}
	next, res := canary.Step(plan, state, obs, stepStart.Add(time.Minute))
	if next.Phase != canary.Analyzing || next.Step != 0 || len(res.Events) != 1 || res.Events[0].Reason != "AnalysisIncomplete" {
		t.Fatalf("after the pause with the canary unread: phase %s, step %d, events %+v; want it held at step 1 with a warning",
			next.Phase, next.Step, res.Events)
	}
}
