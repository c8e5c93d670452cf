package filter

import (
	"testing"

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
