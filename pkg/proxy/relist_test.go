package proxy

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/pkg/shard"
)

// The relist fence, step by step: each step changes the ownership or reports a request, then the writability of
// the namespaces is checked.
func TestRelistFence(t *testing.T) {
	bound := time.Minute
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ownerships := map[string]*config.Ownership{}
	owning := func(namespaces ...string) *config.Ownership {
		name := ""
		var ranges shard.Set
		for _, ns := range namespaces {
			name += ns + ","
			ranges = ranges.Union(rangesOf(ns))
		}
		if own, ok := ownerships[name]; ok {
			return own
		}
		own := &config.Ownership{Shard: 1, Assignment: shard.Assignment{1: ranges}}
		ownerships[name] = own
		return own
	}
	policies := servedKey{resource: schema.GroupResource{Group: "policy.fedmesh.io", Resource: "propagationpolicies"}}
	configMaps := servedKey{resource: schema.GroupResource{Resource: "configmaps"}}

	// step is one thing that happens at t0+at; writable then lists what must be writable and the rest of
	// mine, granted and other must not be.
	type step struct {
		at       time.Duration
		do       func(f *relistFence, now time.Time)
		own      *config.Ownership // the ownership writes are let through under; nil: the last one taken in
		writable []string
	}
	change := func(own *config.Ownership, stale ...servedKey) func(*relistFence, time.Time) {
		return func(f *relistFence, now time.Time) { f.changed(own, stale, now) }
	}
	listed := func(key servedKey) func(*relistFence, time.Time) {
		return func(f *relistFence, _ time.Time) { f.listed(key) }
	}
	resumed := func(key servedKey) func(*relistFence, time.Time) {
		return func(f *relistFence, _ time.Time) { f.resumed(key) }
	}
	bookmark := func(key servedKey) func(*relistFence, time.Time) {
		return func(f *relistFence, _ time.Time) { f.initialEventsEnded(key) }
	}
	stale := func(key servedKey) func(*relistFence, time.Time) {
		return func(f *relistFence, now time.Time) { f.madeStale(key, now) }
	}
	nothing := func(*relistFence, time.Time) {}
	mine, both := owning("mine"), owning("mine", "granted")

	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"a start fences nothing", []step{
			{0, change(mine), nil, []string{"mine"}},
		}},
		{"a start with watches open under no ownership: the lease restored", []step{
			{0, change(nil), nil, nil},
			{time.Second, change(mine, configMaps), nil, nil},
			{2 * time.Second, bookmark(configMaps), nil, []string{"mine"}},
		}},
		{"a grant while no informer watches fences nothing", []step{
			{0, change(mine), nil, []string{"mine"}},
			{time.Second, change(both), nil, []string{"mine", "granted"}},
		}},
		{"a grant waits for every watch it ended", []step{
			{0, change(mine), nil, []string{"mine"}},
			{time.Second, change(both, policies, configMaps), nil, []string{"mine"}},
			{2 * time.Second, bookmark(configMaps), nil, []string{"mine"}},
			{3 * time.Second, listed(policies), nil, []string{"mine"}},
			{4 * time.Second, resumed(policies), nil, []string{"mine", "granted"}},
		}},
		{"a list is not enough: its pages may go on, its store is replaced before the watch", []step{
			{0, change(mine), nil, []string{"mine"}},
			{time.Second, change(both, policies), nil, []string{"mine"}},
			{2 * time.Second, listed(policies), nil, []string{"mine"}},
			{3 * time.Second, listed(policies), nil, []string{"mine"}},
		}},
		{"a resumed watch without a list under the new view is not a relist", []step{
			{0, change(mine), nil, []string{"mine"}},
			{time.Second, change(both, policies), nil, []string{"mine"}},
			{2 * time.Second, resumed(policies), nil, []string{"mine"}},
		}},
		{"an informer that never comes back fences for the bound only", []step{
			{0, change(mine), nil, []string{"mine"}},
			{time.Second, change(both, policies), nil, []string{"mine"}},
			{time.Second + bound - time.Millisecond, nothing, nil, []string{"mine"}},
			{time.Second + bound, nothing, nil, []string{"mine", "granted"}},
		}},
		{"a write under an ownership not taken in yet", []step{
			{0, change(mine), nil, []string{"mine"}},
			{time.Second, nothing, both, []string{"mine"}},
			{2 * time.Second, change(both), both, []string{"mine", "granted"}},
		}},
		{"a revocation fences nothing new", []step{
			{0, change(both), nil, []string{"mine", "granted"}},
			{time.Second, change(mine, policies), nil, []string{"mine"}},
		}},
		{"a watch made stale after the grant is awaited too", []step{
			{0, change(mine), nil, []string{"mine"}},
			{time.Second, change(both), nil, []string{"mine", "granted"}},
			{2 * time.Second, stale(policies), nil, []string{"mine"}},
			{3 * time.Second, bookmark(policies), nil, []string{"mine", "granted"}},
		}},
		{"a watch made stale past the bound fences nothing", []step{
			{0, change(mine), nil, []string{"mine"}},
			{time.Second, change(both), nil, []string{"mine", "granted"}},
			{time.Second + bound, stale(policies), nil, []string{"mine", "granted"}},
		}},
		{"a second grant before the first's relists", []step{
			{0, change(owning("mine", "other")), nil, []string{"mine", "other"}},
			{time.Second, change(owning("mine", "other", "granted"), policies), nil, []string{"mine", "other"}},
			{2 * time.Second, change(owning("granted", "mine")), nil, []string{"mine"}},
			{3 * time.Second, change(owning("granted", "mine", "other"), configMaps), nil, []string{"mine"}},
			{4 * time.Second, bookmark(policies), nil, []string{"mine"}},
			{5 * time.Second, bookmark(configMaps), nil, []string{"mine", "granted", "other"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRelistFence(bound)
			var last *config.Ownership
			for i, s := range tc.steps {
				now := t0.Add(s.at)
				s.do(f, now)
				f.mu.Lock()
				if last = f.settled; s.own != nil {
					last = s.own
				}
				f.mu.Unlock()
				want := map[string]bool{}
				for _, ns := range s.writable {
					want[ns] = true
				}
				for _, ns := range []string{"mine", "granted", "other"} {
					if !last.Owned().ContainsNamespace(ns) {
						continue // the ownership fence refuses it
					}
					if got := f.writable(last, ns, now); got != want[ns] {
						t.Errorf("step %d (at %v): %s writable %v, want %v", i, s.at, ns, got, want[ns])
					}
				}
			}
		})
	}
}

// A watch-list's initial-events-end bookmark is told from its other events in every encoding, without decoding.
func TestEndsInitialEvents(t *testing.T) {
	for _, tc := range []struct {
		name  string
		event string
		ends  bool
	}{
		{"JSON", `{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"12","annotations":{"k8s.io/initial-events-end":"true"}}}}` + "\n", true},
		{"protobuf", "\x00\x00\x00\x40\n\bBOOKMARK\x12\x34k8s\x00\n\x0f\n\x02v1\x12\tConfigMap\x12\x1b\n\x19k8s.io/initial-events-end", true},
		{"a bookmark without the annotation", `{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"12"}}}` + "\n", false},
		{"an object added", `{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","resourceVersion":"11"}}}` + "\n", false},
	} {
		if got := endsInitialEvents([]byte(tc.event)); got != tc.ends {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.ends)
		}
	}
}
