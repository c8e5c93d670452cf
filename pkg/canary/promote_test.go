package canary

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestBatches(t *testing.T) {
	for _, tc := range []struct {
		name string
		pods []StablePod
		want []string
	}{
		{"one pod per shard: shard order, whoever leads",
			[]StablePod{{Name: "op-1", Shard: 1, Leader: true}, {Name: "op-0", Shard: 0, Leader: true}, {Name: "op-2", Shard: 2}},
			[]string{"shard 0 leader (op-0)", "shard 1 leader (op-1)", "shard 2 non-leaders (op-2)"}},
		{"replicas per shard: non-leaders before the leader, whatever the names",
			[]StablePod{{Name: "a-0", Shard: 0, Leader: true}, {Name: "c-0", Shard: 0}, {Name: "b-0", Shard: 0},
				{Name: "a-1", Shard: 1}, {Name: "b-1", Shard: 1, Leader: true}},
			[]string{"shard 0 non-leaders (b-0, c-0)", "shard 0 leader (a-0)", "shard 1 non-leaders (a-1)", "shard 1 leader (b-1)"}},
		{"no pods", nil, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := []string{}
			for _, b := range Batches(tc.pods) {
				got = append(got, b.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Batches = %q, want %q", got, tc.want)
			}
		})
	}
}

// rollWorld plays the StatefulSet controller and the kubelet around Roll: a deleted pod comes back on the new
// version, and is ready one look later.
type rollWorld struct {
	pods    []StablePod
	deleted []string // in order
}

func (w *rollWorld) apply(del []string) {
	for i := range w.pods {
		p := &w.pods[i]
		switch {
		case slices.Contains(del, p.Name):
			p.Missing, p.Ready, w.deleted = true, false, append(w.deleted, p.Name)
		case p.Missing:
			p.Missing, p.Updated = false, true // recreated from the new template, not ready yet
		case p.Updated && !p.Ready:
			p.Ready = true
		}
	}
}

// Roll replaces shard by shard, non-leaders before the leader, pauses after each batch, and ends Done with every
// pod on the new version; it never deletes a pod of the next batch while one is not ready.
func TestRollOrderAndPauses(t *testing.T) {
	w := &rollWorld{pods: []StablePod{
		{Name: "op-a0", Shard: 0, Leader: true, Ready: true}, {Name: "op-b0", Shard: 0, Ready: true},
		{Name: "op-a1", Shard: 1, Ready: true}, {Name: "op-b1", Shard: 1, Leader: true, Ready: true},
	}}
	const pause, poll = time.Minute, time.Second
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var s RollState
	var reasons []string
	var deletedAt []time.Time
	for range 100 {
		next, res := Roll(s, w.pods, pause, poll, now)
		if again, res2 := Roll(next, w.pods, pause, poll, now); !reflect.DeepEqual(again, next) || len(res2.Events) > 0 {
			t.Fatalf("not a fixpoint: %+v then %+v %v", next, again, res2.Events)
		}
		for _, e := range res.Events {
			reasons = append(reasons, e.Reason)
		}
		for range res.Delete {
			deletedAt = append(deletedAt, now)
		}
		s = next
		if s.Done {
			break
		}
		w.apply(res.Delete)
		now = now.Add(min(res.RequeueAfter, 10*time.Second))
	}
	if !s.Done || s.BatchesDone != 4 {
		t.Fatalf("roll ended in %+v", s)
	}
	if want := []string{"op-b0", "op-a0", "op-a1", "op-b1"}; !slices.Equal(w.deleted, want) {
		t.Errorf("deleted %v, want %v", w.deleted, want)
	}
	for i := 1; i < len(deletedAt); i++ {
		if gap := deletedAt[i].Sub(deletedAt[i-1]); gap < pause {
			t.Errorf("batch %d started %v after the previous one, want >= the pause %v", i+1, gap, pause)
		}
	}
	if want := "RollingBatch BatchRolled RollingBatch BatchRolled RollingBatch BatchRolled RollingBatch BatchRolled StableRolledOut"; strings.Join(reasons, " ") != want {
		t.Errorf("events %v, want %s", reasons, want)
	}
	for _, p := range w.pods {
		if !p.Updated || !p.Ready {
			t.Errorf("pod %+v not rolled", p)
		}
	}
}

func TestRollSteps(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	old := func(name string, shard int, leader bool) StablePod {
		return StablePod{Name: name, Shard: shard, Leader: leader, Ready: true}
	}
	fresh := func(p StablePod) StablePod { p.Updated = true; return p }
	for _, tc := range []struct {
		name       string
		s          RollState
		pods       []StablePod
		wantDelete []string
		wantState  RollState
		wantEvent  string
		wantWait   time.Duration
	}{
		{"first batch: the non-leader", RollState{},
			[]StablePod{old("op-0", 0, true), old("op-1", 0, false)},
			[]string{"op-1"}, RollState{Rolling: []string{"op-1"}}, "batch 1 of 2: shard 0 non-leaders (op-1)", time.Second},
		{"a deletion under way is not repeated", RollState{Rolling: []string{"op-1"}},
			[]StablePod{old("op-0", 0, true), {Name: "op-1", Shard: 0, Ready: true, Terminating: true}},
			nil, RollState{Rolling: []string{"op-1"}}, "", time.Second},
		{"a failed delete is retried", RollState{Rolling: []string{"op-1"}},
			[]StablePod{old("op-0", 0, true), old("op-1", 0, false)},
			[]string{"op-1"}, RollState{Rolling: []string{"op-1"}}, "", time.Second},
		{"batch ready: its pause starts", RollState{Rolling: []string{"op-1"}},
			[]StablePod{old("op-0", 0, true), fresh(old("op-1", 0, false))},
			nil, RollState{BatchesDone: 1, BatchFinished: now}, "pods op-1 run the new version and are ready; pausing 30s", 30 * time.Second},
		{"pause over: the leader", RollState{BatchesDone: 1, BatchFinished: now.Add(-30 * time.Second)},
			[]StablePod{old("op-0", 0, true), fresh(old("op-1", 0, false))},
			[]string{"op-0"}, RollState{Rolling: []string{"op-0"}, BatchesDone: 1, BatchFinished: now.Add(-30 * time.Second)},
			"batch 2 of 2: shard 0 leader (op-0)", time.Second},
		{"an updated pod not ready holds the next batch", RollState{BatchesDone: 1, BatchFinished: now.Add(-time.Hour)},
			[]StablePod{old("op-0", 1, false), {Name: "op-1", Shard: 0, Updated: true}},
			nil, RollState{BatchesDone: 1, BatchFinished: now.Add(-time.Hour)}, "", time.Second},
		{"all updated, last pause under way", RollState{BatchesDone: 2, BatchFinished: now.Add(-10 * time.Second)},
			[]StablePod{fresh(old("op-0", 0, true))},
			nil, RollState{BatchesDone: 2, BatchFinished: now.Add(-10 * time.Second)}, "", 20 * time.Second},
		{"all updated and the pause over: done", RollState{BatchesDone: 2, BatchFinished: now.Add(-time.Minute)},
			[]StablePod{fresh(old("op-0", 0, true)), fresh(old("op-1", 0, false))},
			nil, RollState{BatchesDone: 2, BatchFinished: now.Add(-time.Minute), Done: true}, "every stable pod (2)", 0},
		{"already on the new version: done at once", RollState{},
			[]StablePod{fresh(old("op-0", 0, true))},
			nil, RollState{Done: true}, "StableRolledOut", 0},
		{"no pods: not done", RollState{}, nil, nil, RollState{}, "", time.Second},
		{"a missing pod of a batch under way holds it", RollState{Rolling: []string{"op-0"}},
			[]StablePod{{Name: "op-0", Missing: true}}, nil, RollState{Rolling: []string{"op-0"}}, "", time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, res := Roll(tc.s, tc.pods, 30*time.Second, time.Second, now)
			if !reflect.DeepEqual(got, tc.wantState) {
				t.Errorf("state %+v, want %+v", got, tc.wantState)
			}
			if !slices.Equal(res.Delete, tc.wantDelete) {
				t.Errorf("delete %v, want %v", res.Delete, tc.wantDelete)
			}
			var events []string
			for _, e := range res.Events {
				events = append(events, e.Reason+": "+e.Message)
			}
			if joined := strings.Join(events, "\n"); (tc.wantEvent == "") != (joined == "") || !strings.Contains(joined, tc.wantEvent) {
				t.Errorf("events %q, want %q", joined, tc.wantEvent)
			}
			if res.RequeueAfter != tc.wantWait {
				t.Errorf("requeue %v, want %v", res.RequeueAfter, tc.wantWait)
			}
		})
	}
}
