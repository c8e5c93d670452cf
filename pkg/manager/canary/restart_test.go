package canary

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	pcanary "github.com/fedmesh/fedmesh/pkg/canary"
)

// midStep is a rollout restored from its status by a restarted manager, 11 minutes into the first of two 10-minute
// steps, with its canary pod (measured at srv) and the plan.
func midStep(t *testing.T, srv *httptest.Server, analysis *v1alpha1.CanaryAnalysis) (pcanary.Plan, pcanary.State, corev1.Pod) {
	t.Helper()
	pause := &metav1.Duration{Duration: 10 * time.Minute}
	plan, err := pcanary.FromSpec(&v1alpha1.Canary{Steps: []v1alpha1.CanaryStep{{Percent: 10, Pause: pause}, {Percent: 50, Pause: pause}},
		Analysis: analysis})
	if err != nil {
		t.Fatal(err)
	}
	stepStart := time.Now().Add(-11 * time.Minute).Truncate(time.Second)
	st := v1alpha1.CanaryStatus{Phase: v1alpha1.CanaryProgressing, CurrentStep: 0, StepStartTime: &metav1.Time{Time: stepStart}}
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "op-canary-0", UID: "u1",
		CreationTimestamp: metav1.NewTime(stepStart.Add(-time.Hour)),
		Annotations:       map[string]string{MetricsAnnotation: strings.TrimPrefix(srv.URL, "http://")}},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "op"}}}}
	return plan, plan.Restore(&st, plan.Set(0)), pod
}

// reconcile measures the canary as the ShardingConfig controller does and takes a rollout step.
func reconcile(t *testing.T, o *Observer, plan pcanary.Plan, s pcanary.State, pod corev1.Pod) (pcanary.State, Measurement) {
	t.Helper()
	m, _ := o.Observe(context.Background(), "ops/op", s.StepStart, []corev1.Pod{pod})
	obs := pcanary.Observation{Owned: s.Canary, Requests: m.Requests, Errors: m.Errors, BreakerTrips: m.BreakerTrips,
		Restarts: m.Restarts, Ready: m.Ready, Total: m.Total, Unmeasured: m.Unmeasured, MeasuredSince: m.MeasuredSince}
	next, res := pcanary.Step(plan, s, obs, time.Now())
	for _, e := range res.Events {
		t.Logf("measured %+v; event %s %s: %s", m, e.Type, e.Reason, e.Message)
	}
	return next, m
}

// TestObserverMetMidStepJudgesTheStepOnAFullWindow: a restarted manager does not know what the canary did before
// it, so it does not pass the step on that forgotten window: the pause runs again from its first measurement, and
// errors from then on fail the step.
func TestObserverMetMidStepJudgesTheStepOnAFullWindow(t *testing.T) {
	fp := &fakeProxy{}
	srv := httptest.NewServer(fp)
	defer srv.Close()
	plan, state, pod := midStep(t, srv, &v1alpha1.CanaryAnalysis{MaxErrorRatePercent: ptr(int32(5))})
	fp.set(200, 100, 0) // half the requests failed while the manager was away

	var o Observer
	before := time.Now()
	next, m := reconcile(t, &o, plan, state, pod) // the baselines
	if m.MeasuredSince.Before(before) || m.Errors != 0 {
		t.Errorf("the first measurement of a step under way: %+v; want MeasuredSince from %v and nothing counted", m, before)
	}
	// The next reconcile: no request since the baselines. Nothing was measured to fail, but nothing to pass either.
	next, _ = reconcile(t, &o, plan, next, pod)
	if next.Phase != pcanary.Analyzing || next.Step != 0 || !next.StepStart.Equal(state.StepStart) {
		t.Fatalf("the step passed on a window the manager did not measure: %s at step %d", next.Phase, next.Step)
	}
	fp.set(300, 150, 0) // the canary goes on failing half its requests
	if next, m = reconcile(t, &o, plan, next, pod); next.Phase != pcanary.Failed {
		t.Errorf("%d errors of %d requests since the restart (max 5%%): %s at step %d, not Failed", m.Errors, m.Requests, next.Phase, next.Step)
	}
}

// TestObserverMetMidStepCountsRestartsFinishedInTheStep: restarts before a restarted manager's baseline are hidden in
// it, but a container whose last termination finished after the step began restarted in the step.
func TestObserverMetMidStepCountsRestartsFinishedInTheStep(t *testing.T) {
	fp := &fakeProxy{}
	srv := httptest.NewServer(fp)
	defer srv.Close()
	for _, tc := range []struct {
		name       string
		finished   time.Duration // after the step's start; 0: never terminated
		seenBegin  bool          // the Observer saw the step begin (took its baseline then)
		wantFailed bool
	}{
		{name: "crashed in the step", finished: 5 * time.Minute, wantFailed: true},
		{name: "crashed before the step", finished: -time.Minute},
		{name: "never terminated"},
		{name: "seen from the step's start: every restart counts", finished: 5 * time.Minute, seenBegin: true, wantFailed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, state, pod := midStep(t, srv, &v1alpha1.CanaryAnalysis{MaxRestarts: ptr(int32(0))})
			var o Observer
			if tc.seenBegin {
				o.Observe(context.Background(), "ops/op", state.StepStart, []corev1.Pod{pod})
			}
			// The operator container crashed 6 times and is Ready again.
			pod.Status.ContainerStatuses[0].RestartCount = 6
			if tc.finished != 0 {
				pod.Status.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 2, FinishedAt: metav1.NewTime(state.StepStart.Add(tc.finished))}}
			}
			next, m := reconcile(t, &o, plan, state, pod)
			if (next.Phase == pcanary.Failed) != tc.wantFailed {
				t.Errorf("measured %+v: %s at step %d; want failed %v", m, next.Phase, next.Step, tc.wantFailed)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
