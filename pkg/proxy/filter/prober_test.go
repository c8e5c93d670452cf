package filter

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fedmesh/fedmesh/pkg/shard"
)

func TestProber(t *testing.T) {
	var p Prober
	pods := ProbeKey{GroupResource: schema.GroupResource{Resource: "pods"}}
	memberPods := ProbeKey{Cluster: "member-1", GroupResource: pods.GroupResource}
	lower := shard.NewSet(shard.Range{First: 0, Last: 1<<63 - 1})
	plan, err := Rewrite(p.Resolve(pods, ModeAuto), lower, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := codecs[2]
	filtered := configMapList()
	filtered.ShardInfo = &metav1.ShardInfo{Selector: plan.ShardSelector}
	other := configMapList()
	other.ShardInfo = &metav1.ShardInfo{Selector: "shardRange(object.metadata.namespace, '0x0000000000000000', '0x1000000000000000')"}

	steps := []struct {
		key        ProbeKey
		body       []byte
		wantFilter bool
		wantMode   Mode
	}{
		{pods, c.encode(t, filtered), false, ModeServer},
		{memberPods, c.encode(t, configMapList()), true, ModeClient}, // its own verdict
		{pods, c.encode(t, configMapList()), true, ModeClient},       // one API server without the gate
		{pods, c.encode(t, filtered), false, ModeClient},             // never back up
		{memberPods, c.encode(t, other), true, ModeClient},           // echoes another selector
	}
	if got := p.Resolve(pods, ModeAuto); got != ModeAuto {
		t.Fatalf("before any list: %q, want auto", got)
	}
	for i, s := range steps {
		clientFilter, err := p.CheckList(s.key, plan, s.body, c.contentType)
		if err != nil || clientFilter != s.wantFilter {
			t.Errorf("step %d: CheckList = %v, %v; want %v", i, clientFilter, err, s.wantFilter)
		}
		if got := p.Resolve(s.key, ModeAuto); got != s.wantMode {
			t.Errorf("step %d: Resolve = %q, want %q", i, got, s.wantMode)
		}
	}
	if got := p.Resolve(pods, ModeServer); got != ModeClient {
		t.Errorf("server mode on a server that does not filter: %q, want client", got)
	}
	if got := p.Resolve(pods, ModeLabel); got != ModeLabel {
		t.Errorf("label mode: %q", got)
	}
	p.Forget(pods)
	if v := p.Verdict(pods); v != Unknown || v.String() != "unknown" {
		t.Errorf("after Forget: %v", v)
	}
	// A plan without the check keeps its own answer.
	if cf, err := p.CheckList(pods, Plan{ClientFilter: true}, nil, "x"); !cf || err != nil {
		t.Errorf("CheckList without VerifyShardInfo = %v, %v", cf, err)
	}
	// The same selector spelled otherwise still counts.
	if !sameShardSelector(plan.ShardSelector, "shardRange(object.metadata.namespace,'0x0000000000000000','0x8000000000000000')") {
		t.Error("sameShardSelector is fooled by spaces")
	}
}

// A probe that told nothing (an empty collection) is not sent again for each request, but after its back-off; one
// whose key has a verdict is not due at all, and Forget makes it due at once.
func TestProbeDueAfterAnInconclusiveProbe(t *testing.T) {
	var p Prober
	widgets := ProbeKey{GroupResource: schema.GroupResource{Group: "example.com", Resource: "widgets"}}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if !p.ProbeDue(widgets, now) {
		t.Fatal("nothing known, nothing tried: want a probe due")
	}
	p.Inconclusive(widgets, now.Add(time.Minute))
	for _, at := range []time.Duration{0, time.Second, 59 * time.Second} {
		if p.ProbeDue(widgets, now.Add(at)) {
			t.Errorf("%v after an inconclusive probe: due again, want held off for a minute", at)
		}
	}
	if !p.ProbeDue(widgets, now.Add(time.Minute)) {
		t.Error("a minute after an inconclusive probe: want one due")
	}
	p.Inconclusive(widgets, now.Add(time.Hour))
	p.Forget(widgets)
	if !p.ProbeDue(widgets, now) {
		t.Error("after Forget: want a probe due at once")
	}
	p.Record(widgets, true)
	if p.ProbeDue(widgets, now.Add(time.Hour)) {
		t.Error("with a verdict: want no probe due")
	}
}
