package scheduler

import (
	"cmp"
	"fmt"
	"iter"
	"math"
	"slices"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
)

// preferenceOrder sorts clusters by how much the scheduler prefers them: clusters of the previous result first
// (more replicas first), so a reschedule stays put; then more room (rooms) first; then by name.
func preferenceOrder(clusters []Cluster, previous map[string]int32, rooms map[string]int64) {
	slices.SortStableFunc(clusters, func(a, b Cluster) int {
		pa, inA := previous[a.Name]
		pb, inB := previous[b.Name]
		if inA != inB {
			if inA {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(pb, pa); c != 0 {
			return c
		}
		if c := cmp.Compare(rooms[b.Name], rooms[a.Name]); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
}

// room is the cluster's available replicas, unlimited when unknown.
func room(c Cluster) int64 {
	if !c.AvailableKnown {
		return math.MaxInt32
	}
	return int64(c.Available)
}

// roomFor is each cluster's room for the binding's replicas: the replicas it has plus its free room, or only the
// replicas it has when it is closed to new ones (closed); unlimited when unknown.
func roomFor(clusters []Cluster, closed map[string]string, previous map[string]int32) map[string]int64 {
	rooms := make(map[string]int64, len(clusters))
	for _, c := range clusters {
		r := int64(previous[c.Name])
		if _, shut := closed[c.Name]; !shut {
			r += room(c)
		}
		rooms[c.Name] = r
	}
	return rooms
}

// searchBudget bounds how many choices the spread searches of one Schedule call try together (over every
// clusterAffinities term, and the search for room with its fallback) when the preferred one does not satisfy
// every constraint (choices of groups, and of clusters under a constraint by cluster that other constraints'
// groups make hard to cover); past it, the preferred choice's error stands. Choices of groups are few (a handful
// of regions or zones); choices of n among many clusters are not (10 of 30 are 30 million), and there the budget
// ends the search. Room alone needs no search (spreadSearch.fill). Each term has its share of it (tries.share),
// and no less than termSearchFloor, which alone may take a call of many terms past it.
const searchBudget = 10000

// termSearchFloor is the fewest tries a clusterAffinities term's searches get, however many an earlier term
// spent: a later term placed within that many tries is not starved by an earlier hopeless one, so it is placed
// whichever term was tried first (PreviousAffinity). With at most 32 terms, a Schedule call tries at most
// max(searchBudget, 32*termSearchFloor) choices.
const termSearchFloor = 1000

// tries is a search budget: the tries left, and those made.
type tries struct {
	left, made int
	given      int // the tries it started with, for the error that it is spent
}

func newTries(n int) *tries { return &tries{left: n, given: n} }

// take takes one try, or reports that they are spent.
func (t *tries) take() bool {
	if t.left <= 0 {
		return false
	}
	t.left--
	t.made++
	return true
}

// share is the tries of the next of terms terms still to try: an even share of those left, and at least
// termSearchFloor. Once the term is done, spend takes what it made.
func (t *tries) share(terms int) *tries {
	return newTries(max(t.left/max(terms, 1), termSearchFloor))
}

// spend takes from t the tries a share made (past the floor, more than t has left).
func (t *tries) spend(share *tries) {
	t.left = max(t.left-share.made, 0)
	t.made += share.made
}

// spread narrows clusters (in preference order) to what the spread constraints allow: for each constraint by a
// field or label, the preferred groups (at least minGroups, at most maxGroups); then, for a constraint by
// cluster, at least minGroups and at most maxGroups clusters. When the preferred groups leave too few clusters or
// groups for a later constraint (one region chosen with one cluster in it, two clusters wanted), the next
// preferred choice is tried, as Karmada chooses groups that satisfy the constraints together. When need is
// positive (replicas divided by room), the most preferred choice whose rooms add up to need is taken, as Karmada
// chooses clusters with the replicas in mind (under a constraint by cluster whose clusters must also cover other
// constraints' groups, a choice found greedily or within the search budget); when no choice has that room, the
// most preferred one, whose division then says what room is missing.
func spread(clusters []Cluster, constraints []policyv1alpha1.SpreadConstraint, previous map[string]int32,
	rooms map[string]int64, need int32, budget *tries) ([]Cluster, error) {
	var byCluster, byGroup []policyv1alpha1.SpreadConstraint
	for _, sc := range constraints {
		if key, _ := groupKey(sc); key == string(policyv1alpha1.SpreadByFieldCluster) {
			byCluster = append(byCluster, sc)
		} else {
			byGroup = append(byGroup, sc)
		}
	}
	if need > 0 && len(constraints) > 0 {
		s := &spreadSearch{byGroup: byGroup, byCluster: byCluster, previous: previous, rooms: rooms, need: int64(need),
			budget: budget}
		if out, err := s.narrow(clusters, 0); err == nil {
			return out, nil
		}
	}
	s := &spreadSearch{byGroup: byGroup, byCluster: byCluster, previous: previous, rooms: rooms, budget: budget}
	return s.narrow(clusters, 0)
}

// spreadSearch finds the most preferred clusters that satisfy every spread constraint (and have room for need
// replicas, when need is positive).
type spreadSearch struct {
	byGroup, byCluster []policyv1alpha1.SpreadConstraint
	previous           map[string]int32
	rooms              map[string]int64 // see roomFor
	need               int64
	budget             *tries // the tries left to the term's searches
}

// roomOf is the room of the clusters named.
func (s *spreadSearch) roomOf(names map[string]bool) int64 {
	var sum int64
	for name := range names {
		sum += s.rooms[name]
	}
	return sum
}

// bestRoom is the most room any n of clusters have together.
func (s *spreadSearch) bestRoom(clusters []Cluster, n int) int64 {
	rooms := make([]int64, len(clusters))
	for i, c := range clusters {
		rooms[i] = s.rooms[c.Name]
	}
	slices.Sort(rooms)
	var sum int64
	for _, r := range rooms[max(len(rooms)-n, 0):] {
		sum += r
	}
	return sum
}

// narrow applies the constraints by group from the i-th on to clusters, trying its choices of groups in
// preference order until the constraints after it are satisfied too; then those by cluster. Its error is that of
// the most preferred choice.
func (s *spreadSearch) narrow(clusters []Cluster, i int) ([]Cluster, error) {
	if i == len(s.byGroup) {
		return s.count(clusters)
	}
	sc := s.byGroup[i]
	key, label := groupKey(sc)
	groups := groupClusters(clusters, key, label)
	orderGroups(groups, s.previous, s.rooms)
	if want := max(sc.MinGroups, 1); len(groups) < int(want) {
		return nil, fmt.Errorf("spread by %s needs at least %d groups, the fitting clusters are in %d", describe(sc), want, len(groups))
	}
	// As many groups as allowed: more clusters never leave a later constraint fewer to choose from.
	take := len(groups)
	if sc.MaxGroups > 0 {
		take = min(take, int(sc.MaxGroups))
	}
	var first error
	for chosen := range combinations(len(groups), take) {
		if !s.budget.take() && first != nil {
			break
		}
		in := map[string]bool{}
		for _, g := range chosen {
			for _, c := range groups[g].clusters {
				in[c.Name] = true
			}
		}
		narrowed := slices.DeleteFunc(slices.Clone(clusters), func(c Cluster) bool { return !in[c.Name] })
		out, err := s.narrow(narrowed, i+1)
		if err == nil {
			return out, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}

// count applies the constraints by cluster: at least minGroups clusters, and at most maxGroups, kept so that
// every constraint by group still finds its minGroups among them (and their room s.need). It fails when a
// constraint's cut left an earlier one's groups short (zone minGroups 2, then region maxGroups 1 keeping one
// zone), or the clusters left lack the room needed, so that the search tries the next choice.
func (s *spreadSearch) count(clusters []Cluster) ([]Cluster, error) {
	for _, sc := range s.byCluster {
		if want := max(sc.MinGroups, 1); len(clusters) < int(want) {
			return nil, fmt.Errorf("spread by cluster needs at least %d clusters, only %d fit", want, len(clusters))
		}
		if sc.MaxGroups > 0 && len(clusters) > int(sc.MaxGroups) {
			picked, err := s.pick(clusters, int(sc.MaxGroups))
			if err != nil {
				return nil, err
			}
			clusters = picked
		}
	}
	for _, sc := range s.byGroup {
		key, label := groupKey(sc)
		if want, got := max(sc.MinGroups, 1), len(groupClusters(clusters, key, label)); got < int(want) {
			return nil, fmt.Errorf("spread by %s needs at least %d groups, the clusters chosen are in %d", describe(sc), want, got)
		}
	}
	if s.need > 0 {
		names := map[string]bool{}
		for _, c := range clusters {
			names[c.Name] = true
		}
		if r := s.roomOf(names); r < s.need {
			return nil, fmt.Errorf("the clusters chosen have room for %d of the %d replicas", r, s.need)
		}
	}
	return clusters, nil
}

// need is what a constraint by group asks of the clusters picked: want of its groups among them.
type need struct {
	groupOf map[string]string // cluster name -> its group under the constraint
	want    int
}

// needsOf is what the constraints by group ask of any n of clusters, leaving out those every cluster meets alone
// (minGroups 1, every cluster in a group).
func (s *spreadSearch) needsOf(clusters []Cluster) []need {
	var needs []need
	for _, sc := range s.byGroup {
		key, label := groupKey(sc)
		nd := need{groupOf: map[string]string{}, want: int(max(sc.MinGroups, 1))}
		for _, g := range groupClusters(clusters, key, label) {
			for _, c := range g.clusters {
				nd.groupOf[c.Name] = g.value
			}
		}
		if nd.want > 1 || len(nd.groupOf) < len(clusters) {
			needs = append(needs, nd)
		}
	}
	return needs
}

// pick keeps n of clusters (in preference order) such that every constraint by a field or label still finds its
// minGroups among them (and their rooms add up to s.need). Cutting the list at n alone could leave all n in one
// region of a constraint that wants two. Greedily, the clusters that cover the groups wanted are taken (cover),
// then the most preferred of the rest that leave room enough fill up to n (fill): with no groups to cover, that
// is the most preferred n with room whenever any n have it, found without a search. When greed misses (the
// cluster that brings most groups takes a place two others needed, or the clusters that cover the groups lack the
// room), the choices of n clusters are tried in preference order, within the budget.
func (s *spreadSearch) pick(clusters []Cluster, n int) ([]Cluster, error) {
	needs := s.needsOf(clusters)
	keep := func(chosen map[string]bool) []Cluster {
		return slices.DeleteFunc(slices.Clone(clusters), func(c Cluster) bool { return !chosen[c.Name] })
	}
	chosen := s.cover(clusters, needs, n)
	greedy := len(chosen)
	if greedy <= n {
		if s.fill(clusters, chosen, n) {
			return keep(chosen), nil
		}
		if best := s.bestRoom(clusters, n); best < s.need || len(needs) == 0 {
			return nil, fmt.Errorf("spread by cluster allows at most %d clusters, with room for %d of the %d replicas", n, best, s.need)
		}
	}
	check := newChoiceCheck(clusters, needs, s.rooms, s.need)
	for idx := range combinations(len(clusters), n) {
		if !s.budget.take() {
			if greedy > n {
				return nil, fmt.Errorf("spread by cluster allows at most %d clusters: no %d of them that cover the groups the other spread constraints need were found in the %d tries the search may make (%d cover them)", n, n, s.budget.given, greedy)
			}
			return nil, fmt.Errorf("spread by cluster allows at most %d clusters: no %d of them that cover the groups the other spread constraints need with room for the %d replicas were found in the %d tries the search may make", n, n, s.need, s.budget.given)
		}
		if check.ok(idx) {
			names := map[string]bool{}
			for _, i := range idx {
				names[clusters[i].Name] = true
			}
			return keep(names), nil
		}
	}
	if greedy > n {
		return nil, fmt.Errorf("spread by cluster allows at most %d clusters, too few to cover the groups the other spread constraints need (%d found)", n, greedy)
	}
	return nil, fmt.Errorf("spread by cluster allows at most %d clusters: no %d of them that cover the groups the other spread constraints need have room for the %d replicas", n, n, s.need)
}

// cover takes clusters one by one, each time one that brings the most groups the needs still want, until none
// brings any: the most preferred of them after which the n places can still hold room for s.need, or the most
// preferred when none can (so that a full cluster the binding is on does not take its zone's place from one with
// room, where one with room would do).
func (s *spreadSearch) cover(clusters []Cluster, needs []need, n int) map[string]bool {
	have := make([]map[string]bool, len(needs))
	for i := range have {
		have[i] = map[string]bool{}
	}
	gain := func(c Cluster) int {
		g := 0
		for i, nd := range needs {
			if v, ok := nd.groupOf[c.Name]; ok && len(have[i]) < nd.want && !have[i][v] {
				g++
			}
		}
		return g
	}
	chosen := map[string]bool{}
	var room int64 // of the chosen
	for {
		spare := spareRoomsOf(clusters, s.rooms, chosen)
		best, bestGain, bestFits := -1, 0, false
		for i, c := range clusters {
			if chosen[c.Name] {
				continue
			}
			g := gain(c)
			if g < bestGain || g == 0 {
				continue
			}
			r := s.rooms[c.Name]
			fits := room+r+spare.bestWithout(r, n-len(chosen)-1) >= s.need
			if g > bestGain || fits && !bestFits {
				best, bestGain, bestFits = i, g, fits
			}
		}
		if best < 0 {
			return chosen
		}
		c := clusters[best]
		chosen[c.Name] = true
		room += s.rooms[c.Name]
		for i, nd := range needs {
			if v, ok := nd.groupOf[c.Name]; ok {
				have[i][v] = true
			}
		}
	}
}

// fill adds clusters to chosen up to n, walking them in preference order and taking each only if the room of the
// chosen with it, and the most room the clusters after it could bring in the places left, still reach s.need. So
// when any n that hold chosen have the room, it ends with the most preferred of them (a cluster passed over could
// be in none of them); it reports whether the chosen have the room.
func (s *spreadSearch) fill(clusters []Cluster, chosen map[string]bool, n int) bool {
	rest := spareRoomsOf(clusters, s.rooms, chosen) // of the clusters neither chosen nor passed over
	room := s.roomOf(chosen)
	for _, c := range clusters {
		if len(chosen) >= n {
			break
		}
		if chosen[c.Name] {
			continue
		}
		r := s.rooms[c.Name]
		if room+r+rest.bestWithout(r, n-len(chosen)-1) >= s.need {
			chosen[c.Name] = true
			room += r
		}
		rest.remove(r)
	}
	return room >= s.need
}

// spareRooms are rooms in descending order.
type spareRooms []int64

// spareRoomsOf are the rooms of the clusters not chosen.
func spareRoomsOf(clusters []Cluster, rooms map[string]int64, chosen map[string]bool) spareRooms {
	var spare spareRooms
	for _, c := range clusters {
		if !chosen[c.Name] {
			spare = append(spare, rooms[c.Name])
		}
	}
	slices.SortFunc(spare, func(a, b int64) int { return cmp.Compare(b, a) })
	return spare
}

// best is the most room k of them have together.
func (r spareRooms) best(k int) int64 {
	var sum int64
	for _, v := range r[:min(max(k, 0), len(r))] {
		sum += v
	}
	return sum
}

// bestWithout is the most room k of them have together once one room v (of them) is taken out.
func (r spareRooms) bestWithout(v int64, k int) int64 {
	if k <= 0 {
		return 0
	}
	if k >= len(r) || v >= r[k-1] { // v is among the k largest
		return r.best(k+1) - v
	}
	return r.best(k)
}

// remove takes one room v (of them) out.
func (r *spareRooms) remove(v int64) {
	i, _ := slices.BinarySearchFunc(*r, v, func(e, t int64) int { return cmp.Compare(t, e) })
	*r = slices.Delete(*r, i, i+1)
}

// choiceCheck tells whether the clusters at some indexes (of one list) cover every need's groups and have the
// room needed, without building maps for each of the many choices a search tries.
type choiceCheck struct {
	rooms  []int64 // by cluster
	groups [][]int // by need, then by cluster: its group's number, -1 for none
	wants  []int   // by need
	seen   [][]int // by need, then by group number: the check that last counted it
	checks int
	need   int64
}

func newChoiceCheck(clusters []Cluster, needs []need, rooms map[string]int64, need int64) *choiceCheck {
	ch := &choiceCheck{rooms: make([]int64, len(clusters)), need: need}
	for i, c := range clusters {
		ch.rooms[i] = rooms[c.Name]
	}
	for _, nd := range needs {
		numbers := map[string]int{}
		groups := make([]int, len(clusters))
		for i, c := range clusters {
			value, ok := nd.groupOf[c.Name]
			if !ok {
				groups[i] = -1
				continue
			}
			if _, ok := numbers[value]; !ok {
				numbers[value] = len(numbers)
			}
			groups[i] = numbers[value]
		}
		ch.groups = append(ch.groups, groups)
		ch.wants = append(ch.wants, nd.want)
		ch.seen = append(ch.seen, make([]int, len(numbers)))
	}
	return ch
}

// ok reports whether the clusters at idx have the room and cover every need's groups.
func (ch *choiceCheck) ok(idx []int) bool {
	var room int64
	for _, i := range idx {
		room += ch.rooms[i]
	}
	if room < ch.need {
		return false
	}
	ch.checks++
	for j, groups := range ch.groups {
		found := 0
		for _, i := range idx {
			if g := groups[i]; g >= 0 && ch.seen[j][g] != ch.checks {
				ch.seen[j][g] = ch.checks
				found++
			}
		}
		if found < ch.wants[j] {
			return false
		}
	}
	return true
}

// combinations yields the k-element subsets of 0..n-1 as increasing indexes, in lexicographic order: the most
// preferred first when the indexes are preference ranks. The slice is reused between yields.
func combinations(n, k int) iter.Seq[[]int] {
	return func(yield func([]int) bool) {
		if k < 0 || k > n {
			return
		}
		idx := make([]int, k)
		for i := range idx {
			idx[i] = i
		}
		for {
			if !yield(idx) {
				return
			}
			i := k - 1
			for i >= 0 && idx[i] == n-k+i {
				i--
			}
			if i < 0 {
				return
			}
			idx[i]++
			for j := i + 1; j < k; j++ {
				idx[j] = idx[j-1] + 1
			}
		}
	}
}

// groupKey is what sc groups by: a field name, or a label when label is true.
func groupKey(sc policyv1alpha1.SpreadConstraint) (key string, label bool) {
	switch {
	case sc.SpreadByLabel != "":
		return sc.SpreadByLabel, true
	case sc.SpreadByField != "":
		return string(sc.SpreadByField), false
	}
	return string(policyv1alpha1.SpreadByFieldCluster), false
}

func describe(sc policyv1alpha1.SpreadConstraint) string {
	if key, label := groupKey(sc); label {
		return "label " + key
	} else {
		return key
	}
}

type group struct {
	value    string
	clusters []Cluster
}

// groupClusters groups clusters (keeping their order) by their value of key; clusters without one are left out.
// A cluster in several zones counts in its first.
func groupClusters(clusters []Cluster, key string, label bool) []*group {
	var groups []*group
	index := map[string]*group{}
	for _, c := range clusters {
		var value string
		if label {
			value = c.Labels[key]
		} else if values, ok := c.field(key); ok {
			value = values[0]
		}
		if value == "" {
			continue
		}
		g, ok := index[value]
		if !ok {
			g = &group{value: value}
			index[value] = g
			groups = append(groups, g)
		}
		g.clusters = append(g.clusters, c)
	}
	return groups
}

// orderGroups sorts groups by preference: more of the previous result's replicas first, then more room (rooms),
// more clusters, and by value.
func orderGroups(groups []*group, previous map[string]int32, rooms map[string]int64) {
	score := func(g *group) (prev, free int64) {
		for _, c := range g.clusters {
			if r, ok := previous[c.Name]; ok {
				prev += int64(r) + 1 // +1: a cluster with 0 replicas (a non-workload) still counts
			}
			free += rooms[c.Name]
		}
		return prev, free
	}
	slices.SortStableFunc(groups, func(a, b *group) int {
		pa, fa := score(a)
		pb, fb := score(b)
		if c := cmp.Compare(pb, pa); c != 0 {
			return c
		}
		if c := cmp.Compare(fb, fa); c != 0 {
			return c
		}
		if c := cmp.Compare(len(b.clusters), len(a.clusters)); c != 0 {
			return c
		}
		return cmp.Compare(a.value, b.value)
	})
}
