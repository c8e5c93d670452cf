package sharding

import (
	"time"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/xds"
)

// inheritedStrays are the strays sc's status tells of (stray: true) that have not acknowledged want and that this
// replica has not heard from: ones a previous leader waited for. Such a proxy may enforce the ranges of its last
// document until its own lease runs out, counted from its last contact with that leader, and may never reconnect
// (its pod's token no longer passes TokenReview); so it is waited for as a member this replica has not heard from
// is, until the election plus ProxyLease and its margin (countedOut). One that connects is a stray like any other.
func (r *Reconciler) inheritedStrays(sc *meshv1alpha1.ShardingConfig, acks map[string]xds.NodeState, members []member, want string, serving, now time.Time) []meshv1alpha1.ProxyStatus {
	if r.ProxyLease <= 0 || r.countedOut(xds.NodeState{}, false, serving, now) {
		r.mu.Lock()
		r.heardStrays = nil // past the wait: no stray can be inherited any more
		r.mu.Unlock()
		return nil
	}
	var out []meshv1alpha1.ProxyStatus
	for _, p := range sc.Status.Proxies {
		key := xds.NodeKey(sc.Namespace+"/"+p.Pod, p.PodUID)
		if !p.Stray || p.AckedVersion == want || isMembers(members, p) {
			continue
		}
		if _, live := acks[key]; live {
			continue // strays lists it
		}
		r.mu.Lock()
		heard := r.heardStrays[key]
		r.mu.Unlock()
		if !heard { // one heard from and forgotten (released, counted out) is not waited for again
			out = append(out, p)
		}
	}
	return out
}

// isMembers reports whether a stray the status tells of is a member's proxy after all: its pod's UID is a member's,
// or, with no UID told, its pod's name.
func isMembers(members []member, p meshv1alpha1.ProxyStatus) bool {
	for _, m := range members {
		if m.pod == p.Pod && (p.PodUID == "" || m.uid == p.PodUID) {
			return true
		}
	}
	return false
}

// heardStray records that this replica heard from the stray of key (in Acks), while a stray may be inherited.
func (r *Reconciler) heardStray(key string, serving, now time.Time) {
	if r.ProxyLease <= 0 || r.countedOut(xds.NodeState{}, false, serving, now) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.heardStrays == nil {
		r.heardStrays = map[string]bool{}
	}
	r.heardStrays[key] = true
}
