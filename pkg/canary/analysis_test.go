package canary

import (
	"strings"
	"testing"
)

func TestAnalyse(t *testing.T) {
	bounds := Analysis{MaxErrorRatePercent: 5, MaxBreakerTrips: 1, MaxRestarts: 0}
	ready := Observation{Ready: 2, Total: 2}
	with := func(f func(*Observation)) Observation { o := ready; f(&o); return o }
	for _, tc := range []struct {
		name      string
		a         Analysis
		o         Observation
		pauseOver bool
		want      string // "" passes, else a substring of the failure
	}{
		{"healthy", bounds, with(func(o *Observation) { o.Requests, o.Errors, o.BreakerTrips = 100, 5, 1 }), true, ""},
		{"no traffic", bounds, ready, true, ""},
		{"error rate over", bounds, with(func(o *Observation) { o.Requests, o.Errors = 100, 6 }), false,
			"error rate 6.0% (6 of 100 requests) is over the maximum 5%"},
		{"errors without requests", bounds, with(func(o *Observation) { o.Errors = 3 }), false,
			"error rate 100.0% (3 of 0 requests)"},
		{"zero error bound", Analysis{0, NoLimit, NoLimit}, with(func(o *Observation) { o.Requests, o.Errors = 1e6, 1 }),
			false, "error rate 0.0% (1 of 1000000 requests) is over the maximum 0%"},
		{"trips over", bounds, with(func(o *Observation) { o.BreakerTrips = 2 }), false,
			"breaker trips: 2, over the maximum 1"},
		{"restarts over", bounds, with(func(o *Observation) { o.Restarts = 1 }), false,
			"pod restarts: 1, over the maximum 0"},
		{"unready during the pause", bounds, Observation{Ready: 1, Total: 2}, false, ""},
		{"unready after the pause", bounds, Observation{Ready: 1, Total: 2}, true,
			"ready canary pods: 1 of 2 after the pause"},
		{"no pods after the pause", bounds, Observation{}, true, "ready canary pods: 0 of 0"},
		{"no limits", Analysis{NoLimit, NoLimit, NoLimit},
			with(func(o *Observation) { o.Requests, o.Errors, o.BreakerTrips, o.Restarts = 10, 10, 99, 99 }), true, ""},
		{"first crossed bound is named", bounds,
			with(func(o *Observation) { o.Requests, o.Errors, o.Restarts = 10, 10, 5 }), true, "error rate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := analyse(tc.a, tc.o, tc.pauseOver)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("analyse = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestUnmeasured(t *testing.T) {
	oneUnread := Observation{Ready: 2, Total: 2, Unmeasured: 1}
	for _, tc := range []struct {
		name string
		a    Analysis
		o    Observation
		want string // "" lets the step pass, else a substring of why it holds
	}{
		{"every pod read", Analysis{0, 0, NoLimit}, Observation{Ready: 2, Total: 2}, ""},
		{"error-rate bound", Analysis{5, NoLimit, NoLimit}, oneUnread,
			"the proxy metrics of 1 of 2 canary pods could not be read"},
		{"breaker-trip bound", Analysis{NoLimit, 0, NoLimit}, oneUnread, "could not be read"},
		{"zero data is not zero errors", Analysis{0, NoLimit, NoLimit},
			Observation{Ready: 1, Total: 1, Unmeasured: 1}, "1 of 1 canary pods"},
		{"only restarts bounded: they come from the pod status", Analysis{NoLimit, NoLimit, 0}, oneUnread, ""},
		{"no bounds", Analysis{NoLimit, NoLimit, NoLimit}, oneUnread, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := unmeasured(tc.a, tc.o)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("unmeasured = %q, want %q", got, tc.want)
			}
		})
	}
}
