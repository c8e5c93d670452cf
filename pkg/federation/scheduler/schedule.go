package scheduler

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

// Input is everything a scheduling decision depends on.
type Input struct {
	// Placement is the binding's placement; nil places on every cluster, all replicas each.
	Placement *policyv1alpha1.Placement
	// Replicas is the template's replica count; 0 for templates without replicas.
	Replicas int32
	// GVK is the template's group, version and kind: a cluster whose reported APIs lack it (a CRD installed only
	// in some members) is no candidate; a target stays (Cluster.serves says why) but takes no new replicas.
	// Empty: not checked.
	GVK schema.GroupVersionKind
	// Clusters are all member clusters.
	Clusters []Cluster
	// Previous is the binding's current result. Its clusters keep their replicas as far as the placement allows,
	// and stay even while not ready or newly tainted NoSchedule (failover, not scheduling, moves work off a failed
	// cluster), but not once being deleted. Such a cluster takes no new replicas, though: a scale-up, or the
	// replicas of a cluster left, go to the clusters that pass the filters; a scale-down may take from it. Leave it
	// empty for a fresh start.
	Previous []workv1alpha1.TargetCluster
	// PreviousAffinity is the clusterAffinities term Previous came from; scheduling tries it first, then the terms
	// after it, then those before it. Empty starts at the first term.
	PreviousAffinity string
	// Settled says the placement has not changed since Previous was made. A settled result of divided replicas
	// stands while it holds every replica and each of its clusters still fits (matches the affinity, is neither
	// evicted nor being deleted), as Karmada keeps it: a binding is placed afresh when its placement or replicas
	// change, not when a cluster comes, recovers or changes otherwise (which would move running replicas back and
	// forth); spread constraints are not checked again either. Duplicated placements follow the clusters.
	Settled bool
	// Evicted are clusters failover is taking the binding off; they are not candidates.
	Evicted []string
	// Now is the time for time-limited tolerations.
	Now time.Time
}

// Result is a scheduling decision.
type Result struct {
	// Clusters are the target clusters with their replicas, sorted by name.
	Clusters []workv1alpha1.TargetCluster
	// AffinityName is the clusterAffinities term used; empty with clusterAffinity.
	AffinityName string
	// NoRoom are the clusters a duplicated binding was left off for want of room there alone, sorted: room freed
	// on one of them may place the binding there too.
	NoRoom []string
}

// UnschedulableError says why no clusterAffinities term (or the clusterAffinity) could place the binding.
type UnschedulableError struct {
	// Terms are the failures of every term, in the order they were tried.
	Terms []TermFailure
}

// TermFailure is why one affinity term could not place the binding.
type TermFailure struct {
	// AffinityName is the term; empty for clusterAffinity.
	AffinityName string
	// Filtered says, for each cluster left out, why.
	Filtered map[string]string
	// Reason is why the clusters that passed the filters did not do: spread or capacity.
	Reason string
}

func (e *UnschedulableError) Error() string {
	parts := make([]string, len(e.Terms))
	for i, t := range e.Terms {
		parts[i] = t.String()
	}
	return strings.Join(parts, "; ")
}

func (t TermFailure) String() string {
	var b strings.Builder
	if t.AffinityName != "" {
		fmt.Fprintf(&b, "affinity %s: ", t.AffinityName)
	}
	b.WriteString(t.Reason)
	names := make([]string, 0, len(t.Filtered))
	for name := range t.Filtered {
		names = append(names, name)
	}
	sort.Strings(names)
	for i, name := range names {
		sep := ", "
		if i == 0 {
			sep = " ("
		}
		fmt.Fprintf(&b, "%s%s: %s", sep, name, t.Filtered[name])
	}
	if len(names) > 0 {
		b.WriteString(")")
	}
	return b.String()
}

// Schedule places the binding, or says why it cannot.
func Schedule(in Input) (Result, error) {
	return schedule(in, newTries(searchBudget))
}

// schedule is Schedule with the tries its spread searches may make together, shared out among the terms (budget;
// see searchBudget).
func schedule(in Input, budget *tries) (Result, error) {
	p := in.Placement
	if p == nil {
		p = &policyv1alpha1.Placement{}
	}
	previous := map[string]int32{}
	for _, t := range in.Previous {
		previous[t.Name] = t.Replicas
	}
	terms := p.ClusterAffinities
	if len(terms) == 0 {
		var a policyv1alpha1.ClusterAffinity
		if p.ClusterAffinity != nil {
			a = *p.ClusterAffinity
		}
		terms = []policyv1alpha1.ClusterAffinityTerm{{ClusterAffinity: a}}
	}
	start := slices.IndexFunc(terms, func(t policyv1alpha1.ClusterAffinityTerm) bool {
		return t.AffinityName == in.PreviousAffinity
	})
	if start >= 0 && stands(in, p, &terms[start].ClusterAffinity, previous) {
		return Result{Clusters: sortTargets(slices.Clone(in.Previous)), AffinityName: in.PreviousAffinity}, nil
	}
	// The previous term first, then those after it, then those before it: a binding that fell back to a later
	// term stays there while it can (it does not move back by itself when an earlier one recovers), but once the
	// later terms fail too an earlier one that fits takes it rather than none.
	from := max(start, 0)
	order := append(slices.Clone(terms[from:]), terms[:from]...)
	var failed UnschedulableError
	for i, term := range order {
		share := budget.share(len(order) - i)
		result, failure := scheduleTerm(in, p, &term.ClusterAffinity, previous, share)
		budget.spend(share)
		if failure == nil {
			result.AffinityName = term.AffinityName
			return result, nil
		}
		failure.AffinityName = term.AffinityName
		failed.Terms = append(failed.Terms, *failure)
	}
	return Result{}, &failed
}

// stands reports whether a settled previous result of divided replicas is kept (Input.Settled): it holds every
// replica and each of its clusters still fits affinity, the term it was made with.
func stands(in Input, p *policyv1alpha1.Placement, affinity *policyv1alpha1.ClusterAffinity, previous map[string]int32) bool {
	if !in.Settled || len(in.Previous) == 0 || Duplicated(p, in.Replicas) {
		return false
	}
	var sum int32
	for _, t := range in.Previous {
		sum += t.Replicas
	}
	if sum != in.Replicas {
		return false
	}
	for _, t := range in.Previous {
		i := slices.IndexFunc(in.Clusters, func(c Cluster) bool { return c.Name == t.Name })
		if i < 0 || fit(&in.Clusters[i], in, p, affinity, previous, false) != "" {
			return false
		}
	}
	return true
}

// Duplicated reports whether every cluster gets all replicas: Duplicated, or nothing to divide.
func Duplicated(p *policyv1alpha1.Placement, replicas int32) bool {
	rs := p.ReplicaScheduling
	return rs == nil || rs.ReplicaSchedulingType == policyv1alpha1.ReplicaSchedulingTypeDuplicated || replicas == 0
}

// scheduleTerm places the binding on the clusters one affinity selects.
func scheduleTerm(in Input, p *policyv1alpha1.Placement, affinity *policyv1alpha1.ClusterAffinity,
	previous map[string]int32, budget *tries) (Result, *TermFailure) {
	rs := p.ReplicaScheduling
	duplicated := Duplicated(p, in.Replicas)
	filtered := map[string]string{}
	var candidates []Cluster
	var noRoom []string
	for _, c := range in.Clusters {
		why := fit(&c, in, p, affinity, previous, duplicated)
		if why != "" {
			filtered[c.Name] = why
			if room := lacksRoom(&c, in, duplicated); room != "" && why == room { // every other filter passed
				noRoom = append(noRoom, c.Name)
			}
			continue
		}
		candidates = append(candidates, c)
	}
	if len(candidates) == 0 {
		return Result{}, &TermFailure{Filtered: filtered, Reason: "no cluster fits"}
	}
	// Clusters of the previous result that would not be taken now keep what they have, but get no more.
	closed := closedOf(candidates, in, p, previous, duplicated)
	rooms := roomFor(candidates, closed, previous)
	preferenceOrder(candidates, previous, rooms)
	var need int32
	if !duplicated && dividesByRoom(rs) {
		need = in.Replicas
	}
	candidates, err := spread(candidates, p.SpreadConstraints, previous, rooms, need, budget)
	if err != nil {
		return Result{}, &TermFailure{Filtered: filtered, Reason: err.Error()}
	}
	if duplicated {
		out := make([]workv1alpha1.TargetCluster, len(candidates))
		for i, c := range candidates {
			out[i] = workv1alpha1.TargetCluster{Name: c.Name, Replicas: in.Replicas}
		}
		slices.Sort(noRoom)
		return Result{Clusters: sortTargets(out), NoRoom: noRoom}, nil
	}
	closed = closedOf(candidates, in, p, previous, duplicated) // of the clusters spread kept
	replicas, err := divide(rs, candidates, closed, in.Replicas, previous)
	if err != nil {
		for name, why := range closed {
			filtered[name] = fmt.Sprintf("%s, keeps its %d replicas", why, previous[name])
		}
		return Result{}, &TermFailure{Filtered: filtered, Reason: err.Error()}
	}
	var out []workv1alpha1.TargetCluster
	for name, r := range replicas {
		if r > 0 {
			out = append(out, workv1alpha1.TargetCluster{Name: name, Replicas: r})
		}
	}
	return Result{Clusters: sortTargets(out)}, nil
}

// closedOf says which clusters of the previous result among candidates take no new replicas, and why; none for
// duplicated replicas, where no cluster's share grows.
func closedOf(candidates []Cluster, in Input, p *policyv1alpha1.Placement, previous map[string]int32, duplicated bool) map[string]string {
	closed := map[string]string{}
	if duplicated {
		return closed
	}
	for i := range candidates {
		if _, placed := previous[candidates[i].Name]; placed {
			if why := closedToNew(&candidates[i], in, p, false); why != "" {
				closed[candidates[i].Name] = why
			}
		}
	}
	return closed
}

// fit says why c cannot take the binding, or "" when it can. Clusters of the previous result need only match the
// affinity and be neither evicted nor being deleted: a cluster the binding is on is left by failover, not by a new
// taint, a blip or an API list that lacks the kind (though it takes no new replicas: closedToNew); a cluster being
// deleted is left at once, as it would be once it is gone.
func fit(c *Cluster, in Input, p *policyv1alpha1.Placement, affinity *policyv1alpha1.ClusterAffinity,
	previous map[string]int32, duplicated bool) string {
	if slices.Contains(in.Evicted, c.Name) {
		return "evicted by failover"
	}
	if c.Deleting {
		return "being deleted"
	}
	if why := matchAffinity(affinity, c); why != "" {
		return why
	}
	if _, placed := previous[c.Name]; placed {
		return ""
	}
	return closedToNew(c, in, p, duplicated)
}

// closedToNew says why c takes no new work (its API list lacks the kind, not ready, a taint not tolerated, no room
// for a duplicated copy), or "" when it does.
func closedToNew(c *Cluster, in Input, p *policyv1alpha1.Placement, duplicated bool) string {
	if why := c.serves(in.GVK); why != "" {
		return why
	}
	if !c.ready() {
		return "not ready"
	}
	if t := untolerated(c, p.ClusterTolerations, in.Now, corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute); t != nil {
		return fmt.Sprintf("taint %s not tolerated", t.ToString())
	}
	return lacksRoom(c, in, duplicated)
}

// lacksRoom says why c has no room for a duplicated copy of the replicas, or "" when it has (or its room is not
// known, or the replicas are divided: a cluster takes what room it has).
func lacksRoom(c *Cluster, in Input, duplicated bool) string {
	if duplicated && in.Replicas > 0 && c.AvailableKnown && c.Available < in.Replicas {
		return fmt.Sprintf("room for %d of %d replicas", c.Available, in.Replicas)
	}
	return ""
}

// divide shares replicas out among clusters (in preference order) as rs says. The closed clusters (of the previous
// result, but closed to new work) get at most what they had.
func divide(rs *policyv1alpha1.ReplicaSchedulingStrategy, clusters []Cluster, closed map[string]string, replicas int32,
	previous map[string]int32) (map[string]int32, error) {
	if rs.ReplicaDivisionPreference == policyv1alpha1.ReplicaDivisionPreferenceAggregated {
		return aggregated(clusters, closed, replicas, previous)
	}
	wp := rs.WeightPreference
	switch {
	case wp != nil && wp.DynamicWeight == policyv1alpha1.DynamicWeightByAvailableReplicas:
		return dynamic(clusters, closed, replicas, previous)
	case wp != nil && len(wp.StaticWeightList) > 0:
		return weighted(clusters, closed, replicas, previous, func(clusters []Cluster) []share {
			shares := staticWeights(clusters, wp.StaticWeightList, previous)
			if len(shares) == 0 {
				// As Karmada: with no fitting cluster in the list, every fitting cluster weighs the same.
				shares = equalWeights(clusters, previous)
			}
			return shares
		})
	}
	return weighted(clusters, closed, replicas, previous, func(clusters []Cluster) []share {
		return equalWeights(clusters, previous)
	})
}

// dividesByRoom reports whether rs divides replicas by the clusters' room (dynamic weights, or aggregated), so that
// the clusters chosen need room for them.
func dividesByRoom(rs *policyv1alpha1.ReplicaSchedulingStrategy) bool {
	if rs.ReplicaDivisionPreference == policyv1alpha1.ReplicaDivisionPreferenceAggregated {
		return true
	}
	wp := rs.WeightPreference
	return wp != nil && wp.DynamicWeight == policyv1alpha1.DynamicWeightByAvailableReplicas
}

func sortTargets(targets []workv1alpha1.TargetCluster) []workv1alpha1.TargetCluster {
	slices.SortFunc(targets, func(a, b workv1alpha1.TargetCluster) int { return strings.Compare(a.Name, b.Name) })
	return targets
}
