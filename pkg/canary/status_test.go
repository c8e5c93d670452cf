package canary

import (
	"testing"
	"time"

	"github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/shard"
)

// A State survives being persisted as the API's CanaryStatus, except that Failed comes back as RolledBack.
func TestStatusRoundTrip(t *testing.T) {
	p := Plan{Steps: []PlanStep{{Namespaces: []string{"shop"}}, {Percent: 10}, {Percent: 50}}}
	start := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	set := p.Set(1)
	for _, tc := range []struct {
		in, want State
		phase    v1alpha1.CanaryPhase
		step     int32
	}{
		{State{Phase: Pending, Step: -1}, State{Phase: Pending, Step: -1}, "", 0},
		{State{Phase: Progressing, Step: 0, Canary: p.Set(0)}, State{Phase: Progressing, Step: 0, Canary: set},
			v1alpha1.CanaryProgressing, -1},
		{State{Phase: Analyzing, Step: 1, StepStart: start, Canary: set, Message: "m"},
			State{Phase: Analyzing, Step: 1, StepStart: start, Canary: set, Message: "m"}, v1alpha1.CanaryProgressing, 0},
		{State{Phase: Paused, Step: 2, StepStart: start, Canary: set}, State{Phase: Paused, Step: 2, StepStart: start,
			Canary: set}, v1alpha1.CanaryPaused, 1},
		{State{Phase: Promoted, Step: 2, Canary: set}, State{Phase: Promoted, Step: 2, Canary: set},
			v1alpha1.CanaryPromoted, 1},
		{State{Phase: Failed, Step: 1, Message: "why"}, State{Phase: RolledBack, Step: 1, Message: "why", Canary: set},
			v1alpha1.CanaryRolledBack, 0},
	} {
		st := p.Status(tc.in)
		if st.Phase != tc.phase || st.CurrentStep != tc.step {
			t.Errorf("Status(%s) = phase %q step %d, want %q %d", tc.in.Phase, st.Phase, st.CurrentStep, tc.phase, tc.step)
		}
		got := p.Restore(&st, set)
		if tc.in.Phase == Pending {
			tc.want.Canary = shard.Set{}
		}
		if got.Phase != tc.want.Phase || got.Step != tc.want.Step || !got.StepStart.Equal(tc.want.StepStart) ||
			got.Message != tc.want.Message || !got.Canary.Equal(tc.want.Canary) {
			t.Errorf("Restore(Status(%+v)) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
	if got := p.Restore(nil, shard.Set{}); got.Phase != Pending {
		t.Errorf("Restore(nil) = %+v, want Pending", got)
	}
}
