package status

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/rendering"
)

func TestClusterReady(t *testing.T) {
	for _, tc := range []struct {
		status metav1.ConditionStatus
		want   bool
	}{{"", true}, {metav1.ConditionTrue, true}, {metav1.ConditionFalse, false}, {metav1.ConditionUnknown, false}} {
		c := &clusterv1alpha1.Cluster{}
		if tc.status != "" {
			c.Status.Conditions = []metav1.Condition{{Type: clusterv1alpha1.ClusterConditionReady, Status: tc.status}}
		}
		if got := clusterReady(c); got != tc.want {
			t.Errorf("Ready=%q: ready %v, want %v", tc.status, got, tc.want)
		}
	}
}

func TestStaleStatuses(t *testing.T) {
	id := workv1alpha1.ResourceIdentifier{Ordinal: 0, Kind: "Deployment", Name: "web"}
	got := staleStatuses([]workv1alpha1.ManifestStatus{{Identifier: id, Status: raw(`{"readyReplicas":2}`), Health: workv1alpha1.ResourceHealthy}})
	if len(got) != 1 || got[0].Identifier != id || got[0].Status != nil || got[0].Health != workv1alpha1.ResourceUnknown {
		t.Errorf("stale %+v", got)
	}
}

func TestAggregatedItems(t *testing.T) {
	applied := metav1.Condition{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionTrue, Reason: "Applied", Message: "ok"}
	conflict := metav1.Condition{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionFalse, Reason: "ConflictAbort", Message: "exists"}
	appliedAt2 := applied
	appliedAt2.ObservedGeneration = 2
	w := func(cluster string, cond *metav1.Condition, ms ...workv1alpha1.ManifestStatus) workv1alpha1.Work {
		x := workv1alpha1.Work{Spec: workv1alpha1.WorkSpec{ClusterName: cluster}}
		if cond != nil {
			x.Status.Conditions = []metav1.Condition{*cond}
		}
		x.Status.ManifestStatuses = ms
		return x
	}
	workload := workv1alpha1.ManifestStatus{Identifier: workv1alpha1.ResourceIdentifier{Ordinal: 0}, Status: raw(`{"readyReplicas":2}`), Health: workv1alpha1.ResourceHealthy}
	dependency := workv1alpha1.ManifestStatus{Identifier: workv1alpha1.ResourceIdentifier{Ordinal: 1}, Health: workv1alpha1.ResourceUnhealthy}
	going := w("again", &applied, workload) // targeted again while its Work, of the last time, is being deleted
	now := metav1.Now()
	going.DeletionTimestamp = &now
	left := w("left", &applied, workload) // no longer targeted, its Work held by a finalizer in the member
	left.DeletionTimestamp = &now
	// Changed since its last apply: its Applied condition, and the workload it reports, are of its previous
	// manifests.
	changed := w("changed", &appliedAt2, workload)
	changed.Generation = 3
	current := w("current", &appliedAt2, workload)
	current.Generation = 2
	works := []workv1alpha1.Work{
		going,
		left,
		w("old", &applied, workload),           // a cluster being left: still reported, after the targets
		w("b", &applied, dependency, workload), // ordinal 0 is the workload, wherever it is listed
		w("a", &conflict),                      // not applied: says why
		w("down", &applied, workload),          // not Ready: Unknown, no status
		w("fresh", nil),                        // not applied yet
		changed,
		current,
	}
	targets := []workv1alpha1.TargetCluster{{Name: "a"}, {Name: "again"}, {Name: "b"}, {Name: "changed"}, {Name: "current"}, {Name: "down"}, {Name: "fresh"}, {Name: "none"}}
	items := aggregatedItems(targets, works, func(c string) bool { return c != "down" })
	want := []string{
		"a applied=false msg=exists health=Unknown status=",
		"again applied=false msg=" + rendering.PreviousWorkDeleting + " health=Unknown status=",
		`b applied=true msg= health=Healthy status={"readyReplicas":2}`,
		`changed applied=false msg=` + rendering.LatestNotAppliedYet + ` health=Healthy status={"readyReplicas":2}`,
		`current applied=true msg= health=Healthy status={"readyReplicas":2}`,
		"down applied=true msg= health=Unknown status=",
		"fresh applied=false msg=not applied yet health=Unknown status=",
		"none applied=false msg=no Work for this cluster yet health=Unknown status=",
		"left applied=false msg=" + workDeleting + " health=Unknown status=",
		`old applied=true msg= health=Healthy status={"readyReplicas":2}`,
	}
	if len(items) != len(want) {
		t.Fatalf("items %+v", items)
	}
	for i, it := range items {
		s := ""
		if it.Status != nil {
			s = string(it.Status.Raw)
		}
		got := fmt.Sprintf("%s applied=%v msg=%s health=%s status=%s", it.ClusterName, it.Applied, it.AppliedMessage, it.Health, s)
		if got != want[i] {
			t.Errorf("item %d: %s\n want %s", i, got, want[i])
		}
	}
}

func TestEquality(t *testing.T) {
	if !rawEqual(raw(`{"a":1,"b":[2]}`), raw(`{"b":[2], "a":1}`)) || rawEqual(raw(`{"a":1}`), raw(`{"a":2}`)) {
		t.Error("rawEqual compares by value")
	}
	if !rawEqual(nil, &runtime.RawExtension{}) || rawEqual(nil, raw(`{}`)) {
		t.Error("rawEqual: empty and nil are alike, {} is not")
	}
	a := []workv1alpha1.AggregatedStatusItem{{ClusterName: "a", Applied: true, Status: raw(`{"x":1}`)}}
	b := []workv1alpha1.AggregatedStatusItem{{ClusterName: "a", Applied: true, Status: raw(`{ "x": 1 }`)}}
	if !itemsEqual(a, b) {
		t.Error("itemsEqual by value")
	}
	b[0].Health = workv1alpha1.ResourceUnknown
	if itemsEqual(a, b) {
		t.Error("itemsEqual ignores health")
	}
	m := []workv1alpha1.ManifestStatus{{Identifier: workv1alpha1.ResourceIdentifier{Name: "x"}, Status: raw(`{"a":1}`)}}
	n := []workv1alpha1.ManifestStatus{{Identifier: workv1alpha1.ResourceIdentifier{Name: "y"}, Status: raw(`{"a":1}`)}}
	if manifestStatusesEqual(m, n) || !manifestStatusesEqual(m, m) {
		t.Error("manifestStatusesEqual")
	}
}

func raw(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }

func TestSameStatus(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b any
		want bool
	}{
		{"zeros written, none read back", map[string]any{"replicas": int64(0), "readyReplicas": int64(0)}, nil, true},
		{"a count that differs", map[string]any{"replicas": int64(3)}, map[string]any{"replicas": int64(2)}, false},
		{"a count that went to zero", map[string]any{"replicas": int64(0)}, map[string]any{"replicas": int64(2)}, false},
		{"int and float of one number", map[string]any{"replicas": int64(2)}, map[string]any{"replicas": float64(2)}, true},
		{"empty nested map and list", map[string]any{"conditions": []any{}, "x": map[string]any{"y": ""}}, map[string]any{}, true},
		{"list elements keep their place", []any{"", "a"}, []any{"a"}, false},
		{"a flag", map[string]any{"paused": true}, map[string]any{"paused": false}, false},
	} {
		if got := sameStatus(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: sameStatus = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestItemsToWrite(t *testing.T) {
	none := workv1alpha1.AggregatedStatusItem{ClusterName: "a", Health: workv1alpha1.ResourceUnknown, AppliedMessage: noWorkYet}
	fresh := workv1alpha1.AggregatedStatusItem{ClusterName: "b", Health: workv1alpha1.ResourceUnknown, AppliedMessage: rendering.NotAppliedYet}
	applied := workv1alpha1.AggregatedStatusItem{ClusterName: "a", Applied: true, Health: workv1alpha1.ResourceUnknown}
	failed := workv1alpha1.AggregatedStatusItem{ClusterName: "a", Health: workv1alpha1.ResourceUnknown, AppliedMessage: "exists in the member"}
	observed := workv1alpha1.AggregatedStatusItem{ClusterName: "b", Health: workv1alpha1.ResourceHealthy, AppliedMessage: rendering.NotAppliedYet, Status: raw(`{"replicas":1}`)}
	items := func(it ...workv1alpha1.AggregatedStatusItem) []workv1alpha1.AggregatedStatusItem { return it }
	for _, tc := range []struct {
		name       string
		prev, next []workv1alpha1.AggregatedStatusItem
		want       bool
	}{
		{"nothing changed", items(applied), items(applied), false},
		{"a new binding whose clusters have not acted", nil, items(none, fresh), false},
		{"the first Work applied", nil, items(applied, fresh), true},
		{"a Work that failed says why", nil, items(failed, fresh), true},
		{"a status observed before the Applied condition", nil, items(none, observed), true},
		{"back to waiting after having said more", items(applied, fresh), items(none, fresh), true},
		{"emptied", items(applied), nil, true},
	} {
		if got := itemsToWrite(tc.prev, tc.next); got != tc.want {
			t.Errorf("%s: itemsToWrite = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestAwaiting(t *testing.T) {
	applied := metav1.Condition{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionTrue, Reason: "Applied"}
	failed := metav1.Condition{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionFalse, Reason: "ConflictAbort"}
	workload := workv1alpha1.ManifestStatus{Identifier: workv1alpha1.ResourceIdentifier{Ordinal: 0}, Health: workv1alpha1.ResourceHealthy}
	dependency := workv1alpha1.ManifestStatus{Identifier: workv1alpha1.ResourceIdentifier{Ordinal: 1}, Health: workv1alpha1.ResourceHealthy}
	w := func(cluster string, cond *metav1.Condition, ms ...workv1alpha1.ManifestStatus) workv1alpha1.Work {
		x := workv1alpha1.Work{Spec: workv1alpha1.WorkSpec{ClusterName: cluster}, Status: workv1alpha1.WorkStatus{ManifestStatuses: ms}}
		if cond != nil {
			x.Status.Conditions = []metav1.Condition{*cond}
		}
		return x
	}
	// changed is a Work whose manifests changed after cond was given, at its generation 1.
	changed := func(cluster string, cond *metav1.Condition, ms ...workv1alpha1.ManifestStatus) workv1alpha1.Work {
		c := *cond
		c.ObservedGeneration = 1
		x := w(cluster, &c, ms...)
		x.Generation = 2
		return x
	}
	works := func(w ...workv1alpha1.Work) []workv1alpha1.Work { return w }
	targets := []workv1alpha1.TargetCluster{{Name: "a"}, {Name: "b"}}
	for _, tc := range []struct {
		name  string
		works []workv1alpha1.Work
		down  string
		want  int
	}{
		{"both observed", works(w("a", &applied, workload), w("b", &applied, workload)), "", 0},
		{"no Work yet", nil, "", 2},
		{"no Work for b yet", works(w("a", &applied, workload)), "", 1},
		{"b not applied yet", works(w("a", &applied, workload), w("b", nil)), "", 1},
		{"b applied, its workload not observed yet", works(w("a", &applied, workload), w("b", &applied)), "", 1},
		{"only a dependency observed in b", works(w("a", &applied, workload), w("b", &applied, dependency)), "", 1},
		{"b failed to apply: that is its report", works(w("a", &applied, workload), w("b", &failed)), "", 0},
		{"b changed since it was applied: its next apply is awaited", works(w("a", &applied, workload), changed("b", &applied, workload)), "", 1},
		{"b changed since its apply failed: its next apply is awaited", works(w("a", &applied, workload), changed("b", &failed)), "", 1},
		{"b is not Ready: it will tell no more", works(w("a", &applied, workload)), "b", 0},
		{"a Work of a cluster being left does not count", works(w("a", &applied, workload), w("b", &applied, workload), w("old", nil)), "", 0},
	} {
		ready := func(c string) bool { return c != tc.down }
		if got := awaiting(targets, tc.works, ready); got != tc.want {
			t.Errorf("%s: awaiting = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestHolds(t *testing.T) {
	var h holds
	key := types.NamespacedName{Namespace: "ns", Name: "rb"}
	t0 := time.Unix(1000, 0)
	const limit = time.Second
	for _, step := range []struct {
		name     string
		awaiting int
		at       time.Duration // since t0
		limit    time.Duration
		want     time.Duration
	}{
		{"none awaited: write", 0, 0, limit, 0},
		{"two awaited: the hold begins", 2, 0, limit, time.Second},
		{"still two: what is left", 2, 300 * time.Millisecond, limit, 700 * time.Millisecond},
		{"one reported: a full limit again", 1, 800 * time.Millisecond, limit, time.Second},
		{"two again (a Work re-applied): no more time", 2, 1200 * time.Millisecond, limit, 600 * time.Millisecond},
		{"back to one: not below the least, no more time", 1, 1500 * time.Millisecond, limit, 300 * time.Millisecond},
		{"the last silent for the limit: write", 1, 1800 * time.Millisecond, limit, 0},
		{"awaited again: a new hold", 1, 2 * time.Second, limit, time.Second},
		{"all reported: write", 0, 2100 * time.Millisecond, limit, 0},
		{"no limit: never held", 2, 3 * time.Second, 0, 0},
	} {
		if got := h.wait(key, step.awaiting, t0.Add(step.at), step.limit); got != step.want {
			t.Errorf("%s: wait = %s, want %s", step.name, got, step.want)
		}
	}
	h.wait(key, 1, t0, time.Second)
	h.forget(key)
	if len(h.held) != 0 {
		t.Errorf("forget left %v", h.held)
	}
}

// TestHoldLimitFollowsTheGaps: bindings whose clusters report further apart than the configured limit raise the
// limit to twice their gaps, up to maxHoldFactor limits however long one gap is, and closer reports bring it back.
func TestHoldLimitFollowsTheGaps(t *testing.T) {
	const limit = time.Second
	var h holds
	now := time.Unix(1000, 0)
	// report runs bindings whose three clusters report gap apart: each is held from the first report, its hold
	// ends before the next one when gap exceeds the limit, and every later report is progress.
	report := func(bindings int, gap time.Duration) {
		for i := range bindings {
			key := types.NamespacedName{Namespace: "ns", Name: fmt.Sprint("rb-", i)}
			for awaiting := 2; awaiting >= 0; awaiting-- {
				if wait := h.wait(key, awaiting, now, limit); wait > 0 && wait < gap {
					h.wait(key, awaiting, now.Add(wait), limit) // the requeue at the hold's end: it writes
				}
				now = now.Add(gap)
			}
		}
	}
	if got := h.learntLimit(limit); got != limit {
		t.Fatalf("before any gap: limit %s, want %s", got, limit)
	}
	report(2, 300*time.Millisecond)
	if got := h.learntLimit(limit); got != limit {
		t.Errorf("after gaps well within the limit: %s, want %s", got, limit)
	}
	report(20, 2*time.Second)
	if got := h.learntLimit(limit); got < 3500*time.Millisecond || got > 4*time.Second {
		t.Errorf("after gaps of 2 s (each past the limit that was): %s, want nearly 4s", got)
	}
	report(5, time.Minute)
	if got := h.learntLimit(limit); got != maxHoldFactor*limit {
		t.Errorf("after gaps of a minute: %s, want %s", got, maxHoldFactor*limit)
	}
	report(40, 200*time.Millisecond)
	if got := h.learntLimit(limit); got != limit {
		t.Errorf("after close reports again: %s, want %s", got, limit)
	}
	if len(h.held) != 0 {
		t.Errorf("bindings fully reported are still held: %v", h.held)
	}
}

func TestPlacementFailed(t *testing.T) {
	binding := func(clusters int, conds ...metav1.Condition) *workv1alpha1.ResourceBinding {
		b := &workv1alpha1.ResourceBinding{}
		for i := range clusters {
			b.Spec.Clusters = append(b.Spec.Clusters, workv1alpha1.TargetCluster{Name: fmt.Sprintf("m%d", i)})
		}
		b.Status.Conditions = conds
		return b
	}
	unschedulable := metav1.Condition{Type: workv1alpha1.ConditionScheduled, Status: metav1.ConditionFalse, Reason: "Unschedulable", Message: "no cluster fits"}
	otherwise := unschedulable
	otherwise.Message = "no cluster tolerates the taints"
	scheduled := metav1.Condition{Type: workv1alpha1.ConditionScheduled, Status: metav1.ConditionTrue, Reason: "Scheduled"}
	fully := metav1.Condition{Type: workv1alpha1.ConditionFullyApplied, Status: metav1.ConditionFalse, Reason: "NotScheduled"}
	for _, tc := range []struct {
		name     string
		old, cur *workv1alpha1.ResourceBinding
		want     bool
	}{
		{"no cluster found", binding(0), binding(0, unschedulable), true},
		{"no cluster found, for another reason", binding(0, unschedulable), binding(0, otherwise), true},
		{"placed: the spec's change tells", binding(0), binding(2, scheduled), false},
		{"placed, the condition written after", binding(2), binding(2, scheduled), false},
		{"another condition", binding(0, unschedulable), binding(0, unschedulable, fully), false},
	} {
		if got := placementFailed(tc.old, tc.cur); got != tc.want {
			t.Errorf("%s: placementFailed = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestAwaitSync(t *testing.T) {
	const grace, poll = 5 * time.Second, 500 * time.Millisecond
	for _, tc := range []struct {
		name      string
		waited    time.Duration
		write     bool
		wantAgain time.Duration
	}{
		{"just started: wait for it", 0, false, poll},
		{"still listing within grace", 4 * time.Second, false, poll},
		{"past grace: write what is known", grace, true, grace},
		{"backs off with the time waited", time.Minute, true, time.Minute},
		{"up to a bound", time.Hour, true, maxSyncRecheck},
	} {
		write, again := awaitSync(tc.waited, grace, poll)
		if write != tc.write || again != tc.wantAgain {
			t.Errorf("%s: awaitSync = %v, %s; want %v, %s", tc.name, write, again, tc.write, tc.wantAgain)
		}
	}
}

func TestWritten(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "w"}
	var w written
	if w.stale(key, "5") {
		t.Error("stale before any write")
	}
	w.record(key, "10")
	for _, step := range []struct {
		cached string
		want   bool
	}{
		{"9", true},     // the copy from before the write
		{"junk", false}, // versions that do not compare are trusted
	} {
		w.record(key, "10")
		if got := w.stale(key, step.cached); got != step.want {
			t.Errorf("cached %s after writing 10: stale %v, want %v", step.cached, got, step.want)
		}
	}
	w.record(key, "10")
	if w.stale(key, "10") || w.stale(key, "9") {
		t.Error("once the cache shows the write, the record is dropped")
	}
	w.record(key, "10")
	w.forget(key)
	if w.stale(key, "9") {
		t.Error("forgotten")
	}
	w.record(key, "10")
	w.record(key, "")
	if w.stale(key, "9") {
		t.Error("a failed write forgets")
	}
}
