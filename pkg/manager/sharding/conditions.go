package sharding

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReasonAwaitingProxies: the published step is the one the spec asks for, and the manager waits only for proxies it
// has not heard from since its election, each known to have acknowledged the step (to the previous leader) or of a
// pod created since the election (a new process, which holds nothing to give up). Nothing moves: Progressing stays
// False, and Ready is True if each of them had acknowledged the step.
const ReasonAwaitingProxies = "AwaitingProxies"

// stepProxies is what the conditions tell of the proxies of a published step.
type stepProxies struct {
	// members counts the live members; acked those known to have acknowledged the step; strays the strays a
	// handover waits for that have not.
	members, acked, strays int
	// done: the step is the one the spec asks for.
	done bool
	// pending are the proxies waited for (pendingAcks): the members' by pod, the strays' by xds.NodeKey.
	pending []string
	// unheard are the members this replica has not heard from since its election, by pod.
	unheard map[string]bool
	// current are the members known to have acknowledged the step, if only to the previous leader, by pod.
	current map[string]bool
	// fresh are the members whose pods were created after this replica's election, by pod.
	fresh map[string]bool
}

// awaited counts the pending proxies this replica has not heard from, those of them not known to have
// acknowledged the step (behind), and those of the behind whose pods are older than the election (stale: each may
// hold an earlier step, e.g. a grant the previous leader published that reached no proxy); only reports whether
// they are all that is pending.
func (p stepProxies) awaited() (n, behind, stale int, only bool) {
	for _, pod := range p.pending {
		if !p.unheard[pod] {
			continue
		}
		n++
		if !p.current[pod] {
			behind++
			if !p.fresh[pod] {
				stale++
			}
		}
	}
	return n, behind, stale, n == len(p.pending)
}

// stepConditions are the Ready and Progressing conditions of the step published at epoch (ShardUnserved, which
// overrides Ready, aside). A handover is under way while a step short of the spec's is out, or proxies this
// replica has heard from have not acknowledged the step; it is not while the only proxies waited for are ones it
// has not heard from since its election with the spec's step out, none of them stale (awaited): that is a new
// leader waiting for the proxies to reconnect, and nothing moves.
func stepConditions(epoch int64, p stepProxies) (ready, progressing metav1.Condition) {
	ready = metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Assigned",
		Message: fmt.Sprintf("epoch %d acknowledged by all %d proxies", epoch, p.members)}
	if p.acked < p.members {
		ready.Message = fmt.Sprintf("epoch %d acknowledged by %d of %d proxies; the others are out of contact past their lease", epoch, p.acked, p.members)
	}
	progressing = metav1.Condition{Type: "Progressing", Status: metav1.ConditionFalse, Reason: "Steady",
		Message: "every range has its owner"}
	if p.done && len(p.pending) == 0 {
		return ready, progressing
	}
	awaited, behind, stale, only := p.awaited()
	if p.done && only && stale == 0 {
		ready.Reason = ReasonAwaitingProxies
		if behind == 0 {
			ready.Message = fmt.Sprintf("epoch %d acknowledged by %d of %d proxies, %d of them before this manager was elected: waiting to hear from those again",
				epoch, p.acked, p.members, awaited)
		} else {
			ready.Status = metav1.ConditionFalse
			ready.Message = fmt.Sprintf("epoch %d acknowledged by %d of %d proxies; waiting for %d this manager has not heard from since its election",
				epoch, p.acked, p.members, awaited)
		}
		progressing.Reason, progressing.Message = ReasonAwaitingProxies, "no range moves; "+ready.Message
		return ready, progressing
	}
	ready.Status, ready.Reason = metav1.ConditionFalse, "HandingOver"
	ready.Message = fmt.Sprintf("epoch %d: %d of %d proxies acknowledged", epoch, p.acked, p.members)
	if awaited > 0 {
		ready.Message += fmt.Sprintf("; waiting for %d this manager has not heard from since its election", awaited)
	}
	if stale > 0 {
		ready.Message += fmt.Sprintf(", %d of them not known to have the step", stale)
	}
	if p.strays > 0 {
		ready.Message += fmt.Sprintf("; waiting too for %d stray proxies (status.proxies)", p.strays)
	}
	progressing.Status, progressing.Reason, progressing.Message = metav1.ConditionTrue, "HandingOver", ready.Message
	return ready, progressing
}
