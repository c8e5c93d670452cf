package rollout

import (
	"cmp"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/fedmesh/fedmesh/pkg/federation/scheduler"
)

// Phase is where one cluster stands in the rollout of the template's pod template.
type Phase int

const (
	// Idle: nothing to replace here; the cluster's pods run the pod template it was given, or it has none.
	Idle Phase = iota
	// Rolling: the cluster was given the pod template unpaused and is still replacing or starting pods.
	Rolling
	// Waiting: the cluster has pods of an older pod template and has not had its turn.
	Waiting
)

func (p Phase) String() string {
	switch p {
	case Rolling:
		return "Rolling"
	case Waiting:
		return "Waiting"
	default:
		return "Idle"
	}
}

// Member is one cluster of the rollout.
type Member struct {
	Name string
	// Replicas is the cluster's share of the template's replicas.
	Replicas int32
	Phase    Phase
	// Stuck: the cluster cannot take a turn now (what it runs is not known, or its Work is not dispatched); if
	// Waiting, it waits without taking the budget from a cluster that can.
	Stuck bool
	// Granted is, while Rolling, the share its Work gives it now (Granted): pods it may have down or surged
	// already, which a smaller grant would not bring back.
	Granted Grant
}

// Grant is what a cluster that is not Idle gets: a share of the budget to roll with, or Hold.
type Grant struct {
	// Hold: the cluster waits for its turn, paused.
	Hold bool
	// MaxUnavailable and MaxSurge are the cluster's share of the budget when it rolls; their sum is at least 1.
	MaxUnavailable, MaxSurge int32
}

// Budget resolves a rolling update's maxUnavailable and maxSurge (nil: 25%, the Deployment default) against total
// replicas as the Deployment controller does: surge rounds up, unavailability down, and when both come to 0 one
// pod may be unavailable, so the rollout can move.
func Budget(maxUnavailable, maxSurge *intstr.IntOrString, total int32) (unavailable, surge int32, err error) {
	def := intstr.FromString("25%")
	if maxUnavailable == nil {
		maxUnavailable = &def
	}
	if maxSurge == nil {
		maxSurge = &def
	}
	s, err := intstr.GetScaledValueFromIntOrPercent(maxSurge, int(total), true)
	if err != nil {
		return 0, 0, fmt.Errorf("maxSurge: %w", err)
	}
	u, err := intstr.GetScaledValueFromIntOrPercent(maxUnavailable, int(total), false)
	if err != nil {
		return 0, 0, fmt.Errorf("maxUnavailable: %w", err)
	}
	if u < 0 || s < 0 {
		return 0, 0, fmt.Errorf("maxUnavailable %s and maxSurge %s must not be negative", maxUnavailable, maxSurge)
	}
	if u == 0 && s == 0 {
		u = 1
	}
	return int32(u), int32(s), nil
}

// Plan divides the budget (unavailable and surge pods, from Budget) among the members that are not Idle. Rolling
// members keep rolling, with what they were granted: taking the budget from a cluster halfway through would only
// stall it, and the pods it took down stay down until replaced. Waiting members, in name order, get a turn while
// budget is left beyond that. Each member starting gets one pod's worth first (surge before unavailability: a
// surge pod takes no capacity away), then every member rolling a share of the rest in proportion to replicas.
// When the rolling hold more than the budget (it shrank mid-rollout), no one starts and they share the budget
// anew. A member rolling with nothing to give it still gets one pod of surge, or of unavailability when the
// template allows no surge: a Deployment must be able to move. A Stuck member waiting stays held.
func Plan(unavailable, surge int32, members []Member) map[string]Grant {
	var rolling, waiting []Member
	for _, m := range members {
		switch m.Phase {
		case Rolling:
			rolling = append(rolling, m)
		case Waiting:
			waiting = append(waiting, m)
		}
	}
	byName := func(a, b Member) int { return cmp.Compare(a.Name, b.Name) }
	slices.SortFunc(rolling, byName)
	slices.SortFunc(waiting, byName)
	out := map[string]Grant{}
	for _, m := range waiting {
		out[m.Name] = Grant{Hold: true}
	}
	u, s := int64(unavailable), int64(surge)
	ungranted := 0 // rolling members that take a pod first, as starting ones do
	for _, m := range rolling {
		u, s = u-int64(m.Granted.MaxUnavailable), s-int64(m.Granted.MaxSurge)
		if m.Granted.MaxUnavailable+m.Granted.MaxSurge == 0 {
			ungranted++
		}
	}
	if u < 0 || s < 0 {
		fresh := make([]Member, len(rolling))
		for i, m := range rolling {
			m.Granted = Grant{}
			fresh[i] = m
		}
		share(out, int64(unavailable), int64(surge), surge > 0, fresh, nil)
		return out
	}
	var starting []Member
	for _, m := range waiting {
		if !m.Stuck && u+s > int64(ungranted+len(starting)) {
			starting = append(starting, m)
		}
	}
	share(out, u, s, surge > 0, rolling, starting)
	return out
}

// share gives the budget u, s: to each member rolling what it was granted, one pod first to each of those with
// none and to each starting, then the rest to all in proportion to replicas. canSurge says which pod a member
// gets when none is left.
func share(out map[string]Grant, u, s int64, canSurge bool, rolling, starting []Member) {
	active := append(slices.Clone(rolling), starting...)
	for i, m := range active {
		g := Grant{}
		if i < len(rolling) {
			g = m.Granted
		}
		if g.MaxUnavailable+g.MaxSurge == 0 {
			switch {
			case s > 0:
				g.MaxSurge, s = 1, s-1
			case u > 0:
				g.MaxUnavailable, u = 1, u-1
			case canSurge:
				g.MaxSurge = 1
			default:
				g.MaxUnavailable = 1
			}
		}
		out[m.Name] = g
	}
	for name, n := range apportion(int32(u), active) {
		g := out[name]
		g.MaxUnavailable += n
		out[name] = g
	}
	for name, n := range apportion(int32(s), active) {
		g := out[name]
		g.MaxSurge += n
		out[name] = g
	}
}

// apportion divides n among members in proportion to their replicas (equally when none has any), as the
// scheduler divides replicas among clusters.
func apportion(n int32, members []Member) map[string]int32 {
	if n <= 0 || len(members) == 0 {
		return nil
	}
	weights := map[string]int64{}
	var sum int64
	for _, m := range members {
		weights[m.Name] = int64(max(m.Replicas, 0))
		sum += weights[m.Name]
	}
	if sum == 0 {
		for name := range weights {
			weights[name] = 1
		}
	}
	return scheduler.Apportion(n, weights)
}
