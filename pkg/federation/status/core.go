package status

import (
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/rendering"
)

// clusterReady reports whether what fedmesh sees of c can be trusted as current. A Ready condition that is False
// or Unknown says it cannot; a Cluster without one has not been checked yet (no cluster status controller has
// looked at it), and its members' objects are reported as observed.
func clusterReady(c *clusterv1alpha1.Cluster) bool {
	cond := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
	return cond == nil || cond.Status == metav1.ConditionTrue
}

// staleStatuses are prev as a cluster that is not Ready leaves them: each entry keeps its identity, loses its
// status and has health Unknown.
func staleStatuses(prev []workv1alpha1.ManifestStatus) []workv1alpha1.ManifestStatus {
	out := make([]workv1alpha1.ManifestStatus, 0, len(prev))
	for _, s := range prev {
		out = append(out, workv1alpha1.ManifestStatus{Identifier: s.Identifier, Health: workv1alpha1.ResourceUnknown})
	}
	return out
}

// workloadStatus is the status of a Work's first manifest, the workload itself (the others are dependencies).
func workloadStatus(w *workv1alpha1.Work) *workv1alpha1.ManifestStatus {
	for i := range w.Status.ManifestStatuses {
		if w.Status.ManifestStatuses[i].Identifier.Ordinal == 0 {
			return &w.Status.ManifestStatuses[i]
		}
	}
	return nil
}

// aggregatedItems are a binding's per-cluster statuses: one item per target cluster and per other cluster that
// still has a Work of the binding (e.g. one being left), targets first in their order, the rest by name. A Work
// being deleted reports nothing of itself: its member object may outlive it (a finalizer), and its last status is
// stale.
func aggregatedItems(targets []workv1alpha1.TargetCluster, works []workv1alpha1.Work, ready func(cluster string) bool) []workv1alpha1.AggregatedStatusItem {
	byCluster := map[string]*workv1alpha1.Work{}
	var extra []string
	for i := range works {
		c := works[i].Spec.ClusterName
		byCluster[c] = &works[i]
	}
	var clusters []string
	for _, t := range targets {
		if !slices.Contains(clusters, t.Name) {
			clusters = append(clusters, t.Name)
		}
	}
	for c := range byCluster {
		if !slices.Contains(clusters, c) {
			extra = append(extra, c)
		}
	}
	sort.Strings(extra)
	clusters = append(clusters, extra...)

	items := make([]workv1alpha1.AggregatedStatusItem, 0, len(clusters))
	for _, c := range clusters {
		item := workv1alpha1.AggregatedStatusItem{ClusterName: c, Health: workv1alpha1.ResourceUnknown}
		w := byCluster[c]
		if w == nil {
			item.AppliedMessage = noWorkYet
			items = append(items, item)
			continue
		}
		if !w.DeletionTimestamp.IsZero() {
			item.AppliedMessage = workDeleting
			if slices.ContainsFunc(targets, func(t workv1alpha1.TargetCluster) bool { return t.Name == c }) {
				// A target whose Work is going (pkg/federation/rendering): not its current Work, whatever it says.
				item.AppliedMessage = rendering.PreviousWorkDeleting
			}
			items = append(items, item)
			continue
		}
		switch cond, current := rendering.AppliedCondition(w); {
		case cond == nil:
			item.AppliedMessage = rendering.NotAppliedYet
		case !current:
			item.AppliedMessage = rendering.LatestNotAppliedYet
		case cond.Status == metav1.ConditionTrue:
			item.Applied = true
		default:
			item.AppliedMessage = cond.Message
		}
		if ms := workloadStatus(w); ms != nil && ready(c) {
			item.Status = ms.Status.DeepCopy()
			if ms.Health != "" {
				item.Health = ms.Health
			}
		}
		items = append(items, item)
	}
	return items
}

// awaiting counts the target clusters that are Ready and have yet to report on the binding: a cluster with no
// Work, whose Work has no Applied condition about its current manifests, or whose Work is applied and the workload
// not observed yet. A cluster whose apply failed has reported (the failure is news); one that is not Ready will
// report nothing more.
func awaiting(targets []workv1alpha1.TargetCluster, works []workv1alpha1.Work, ready func(cluster string) bool) int {
	n := 0
	for _, t := range targets {
		if !ready(t.Name) {
			continue
		}
		i := slices.IndexFunc(works, func(w workv1alpha1.Work) bool { return w.Spec.ClusterName == t.Name })
		if i < 0 {
			n++
			continue
		}
		cond, current := rendering.AppliedCondition(&works[i])
		if !current || cond.Status == metav1.ConditionTrue && workloadStatus(&works[i]) == nil {
			n++
		}
	}
	return n
}

// placementFailed reports whether cur, a binding without target clusters, has a Scheduled condition other than
// old's: FullyApplied says NotScheduled of such a binding once the scheduler had its say, not before.
func placementFailed(old, cur client.Object) bool {
	o, ok1 := old.(*workv1alpha1.ResourceBinding)
	c, ok2 := cur.(*workv1alpha1.ResourceBinding)
	if !ok1 || !ok2 || len(c.Spec.Clusters) > 0 {
		return false
	}
	before := meta.FindStatusCondition(o.Status.Conditions, workv1alpha1.ConditionScheduled)
	after := meta.FindStatusCondition(c.Status.Conditions, workv1alpha1.ConditionScheduled)
	return (before == nil) != (after == nil) || after != nil && (before.Status != after.Status || before.Reason != after.Reason || before.Message != after.Message)
}

// The messages of an item whose cluster has not acted on the binding yet.
const (
	noWorkYet = "no Work for this cluster yet"
	// workDeleting is the message of a cluster no longer targeted whose Work is being deleted.
	workDeleting = "no longer targeted; its Work is being deleted"
)

// maxSyncRecheck bounds how long a Work waits between looks at a member watch that cannot list: the informer's
// first list, when it succeeds, wakes the Works of the objects it finds anyway.
const maxSyncRecheck = 2 * time.Minute

// awaitSync decides for a Work whose member watches have not all synced, the youngest of them started waited ago,
// whether to write what is known now, and how soon to look again. Within grace a watch is taken to be listing,
// and waited for: its status comes in the same write. Past it, it may never list (say the member's RBAC forbids
// it); what is known is written, and the look again backs off with the time waited.
func awaitSync(waited, grace, poll time.Duration) (write bool, again time.Duration) {
	if waited < grace {
		return false, poll
	}
	return true, min(max(poll, waited), maxSyncRecheck)
}

// itemsToWrite reports whether a binding whose aggregatedStatus is prev should be given next. A binding that
// has none yet gets none while every item only says that its cluster has not acted yet: that says no more than
// an empty list, and skipping it spares each new binding the writes of its Works being made and picked up.
func itemsToWrite(prev, next []workv1alpha1.AggregatedStatusItem) bool {
	if itemsEqual(prev, next) {
		return false
	}
	if len(prev) > 0 {
		return true
	}
	return slices.ContainsFunc(next, func(it workv1alpha1.AggregatedStatusItem) bool {
		waiting := !it.Applied && (it.Status == nil || len(it.Status.Raw) == 0) &&
			(it.AppliedMessage == noWorkYet || it.AppliedMessage == rendering.NotAppliedYet)
		return !waiting
	})
}

// rawEqual compares two raw JSON documents by value, as the API server may re-encode what it stores.
func rawEqual(a, b *runtime.RawExtension) bool {
	if a == nil || b == nil || len(a.Raw) == 0 || len(b.Raw) == 0 {
		return (a == nil || len(a.Raw) == 0) == (b == nil || len(b.Raw) == 0)
	}
	var va, vb any
	if json.Unmarshal(a.Raw, &va) != nil || json.Unmarshal(b.Raw, &vb) != nil {
		return string(a.Raw) == string(b.Raw)
	}
	return reflect.DeepEqual(va, vb)
}

func manifestStatusesEqual(a, b []workv1alpha1.ManifestStatus) bool {
	return slices.EqualFunc(a, b, func(x, y workv1alpha1.ManifestStatus) bool {
		return x.Identifier == y.Identifier && x.Health == y.Health && rawEqual(x.Status, y.Status)
	})
}

func itemsEqual(a, b []workv1alpha1.AggregatedStatusItem) bool {
	return slices.EqualFunc(a, b, func(x, y workv1alpha1.AggregatedStatusItem) bool {
		return x.ClusterName == y.ClusterName && x.Applied == y.Applied && x.AppliedMessage == y.AppliedMessage &&
			x.Health == y.Health && rawEqual(x.Status, y.Status)
	})
}

// sameStatus reports whether two statuses say the same, a field holding its zero value counting as absent: the
// API server drops zero-valued fields of built-in kinds (omitempty), so the status read back from a write of
// {replicas: 0} has no replicas at all, and comparing them plainly would rewrite it on every pass.
func sameStatus(a, b any) bool {
	return reflect.DeepEqual(withoutZeros(a), withoutZeros(b))
}

// withoutZeros is v, a JSON value, without zero values: 0, "", false, null, and maps and lists left empty.
func withoutZeros(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if e = withoutZeros(e); e != nil {
				out[k] = e
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case []any:
		if len(x) == 0 {
			return nil
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = withoutZeros(e)
		}
		return out
	case int64:
		if x == 0 {
			return nil
		}
		return float64(x)
	case int32:
		return withoutZeros(int64(x))
	case int:
		return withoutZeros(int64(x))
	case float64:
		if x == 0 {
			return nil
		}
		return x
	case string:
		if x == "" {
			return nil
		}
		return x
	case bool:
		if !x {
			return nil
		}
		return x
	}
	return v
}
