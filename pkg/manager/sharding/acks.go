package sharding

import (
	"maps"
	"math"
	"slices"
	"time"

	ktypes "k8s.io/apimachinery/pkg/types"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/shard"
	"github.com/fedmesh/fedmesh/pkg/xds"
)

// behind reports whether some member has not acknowledged pub, waited for or not.
func (r *Reconciler) behind(sc *meshv1alpha1.ShardingConfig, pub Published, members []member) bool {
	acks := r.Publisher.Acks()
	for _, m := range members {
		if _, node, _ := nodeOf(acks, sc.Namespace, m); ackedOf(sc, node, m.shard) != version(sc, pub) {
			return true
		}
	}
	return false
}

// nodeOf finds the record of m's proxy in acks, and its key: the one of m's pod UID, or, failing that, the one of its
// pod name alone, from an Authenticator that did not tell the UID. A record of the same pod name and another UID is
// another process (of a pod deleted with --force): not m's, but a stray.
func nodeOf(acks map[string]xds.NodeState, namespace string, m member) (string, xds.NodeState, bool) {
	id := namespace + "/" + m.pod
	if m.uid != "" {
		if node, ok := acks[xds.NodeKey(id, m.uid)]; ok {
			return xds.NodeKey(id, m.uid), node, true
		}
	}
	node, ok := acks[id]
	return id, node, ok
}

// ackedOf is the version of shard id's ownership document that node acknowledged last.
func ackedOf(sc *meshv1alpha1.ShardingConfig, node xds.NodeState, id shard.ShardID) string {
	return ackOf(sc, node, id).Acked
}

// ackOf is what node answered last to shard id's ownership document.
func ackOf(sc *meshv1alpha1.ShardingConfig, node xds.NodeState, id shard.ShardID) xds.AckState {
	name := xds.ResourceName(ktypes.NamespacedName{Namespace: sc.Namespace, Name: sc.Name}, int32(id))
	return node.Resources[xds.ResourceKey{TypeURL: xds.OwnershipType, Name: name}]
}

// stray is a proxy the xDS server knows to serve a shard of a ShardingConfig that no member accounts for.
type stray struct {
	key  string // in Acks
	node xds.NodeState
}

// strays are the proxies of pods in sc's namespace whose metadata names sc and a shard but which are no member's
// (nodeOf), in key order: the proxy of a pod deleted with --force (gone from the API, its containers maybe still
// running), the previous process of a pod name now another pod's (another UID), the proxy of a pod relabeled out
// of spec.selector or of its ordinal, of a stable pod with the canary's ordinal. Each serves what its last document
// said until it acknowledges a later one or its lease runs out, whatever the API says of its pod.
func (r *Reconciler) strays(sc *meshv1alpha1.ShardingConfig, acks map[string]xds.NodeState, members []member) []stray {
	claimed := map[string]bool{}
	for _, m := range members {
		if key, _, ok := nodeOf(acks, sc.Namespace, m); ok {
			claimed[key] = true
		}
	}
	self := ktypes.NamespacedName{Namespace: sc.Namespace, Name: sc.Name}
	serving, now := r.servingSince(), time.Now()
	var out []stray
	for _, key := range slices.Sorted(maps.Keys(acks)) {
		if node := acks[key]; !claimed[key] && node.Metadata.ShardingConfig == self && node.Metadata.Pod.Namespace == sc.Namespace {
			out = append(out, stray{key: key, node: node})
			r.heardStray(key, serving, now)
		}
	}
	return out
}

// waitedFor reports whether a handover waits for a stray: while it is connected, and once it is not, until it is
// counted out (countedOut), unless it was released (it acknowledged that its shard owns no ranges, and no ranges
// were published to that shard since: the previous process of a pod replaced in the ordinary way). With no lease
// (ProxyLease 0) a disconnected stray is not waited for: nothing bounds the wait, and its pod is no live member.
func (r *Reconciler) waitedFor(s stray, serving, now time.Time) bool {
	if s.node.Connected {
		return true
	}
	r.mu.Lock()
	_, released := r.released[s.key]
	r.mu.Unlock()
	return !released && r.ProxyLease > 0 && !r.countedOut(s.node, true, serving, now)
}

// release records the proxies of sc that acknowledged pub, in which their shard owns no ranges.
func (r *Reconciler) release(sc *meshv1alpha1.ShardingConfig, pub Published, acks map[string]xds.NodeState) {
	self := ktypes.NamespacedName{Namespace: sc.Namespace, Name: sc.Name}
	want := version(sc, pub)
	r.mu.Lock()
	defer r.mu.Unlock()
	for key, node := range acks {
		id := shard.ShardID(node.Metadata.Shard)
		if node.Metadata.ShardingConfig != self || !pub.Assignment[id].Empty() || ackedOf(sc, node, id) != want {
			continue
		}
		if r.released == nil {
			r.released = map[string]releasedProxy{}
		}
		r.released[key] = releasedProxy{sc: self, shard: id}
	}
}

// granting forgets the releases of the proxies of the shards among ids to which pub gives ranges, before pub is
// published to them.
func (r *Reconciler) granting(sc *meshv1alpha1.ShardingConfig, pub Published, ids []shard.ShardID) {
	self := ktypes.NamespacedName{Namespace: sc.Namespace, Name: sc.Name}
	r.mu.Lock()
	defer r.mu.Unlock()
	for key, rp := range r.released {
		if rp.sc == self && slices.Contains(ids, rp.shard) && !pub.Assignment[rp.shard].Empty() {
			delete(r.released, key)
		}
	}
}

// pendingAcks lists the proxies that have not acknowledged pub by now and are not counted out: the members' (by pod
// name), and the strays' (by pod name and UID, xds.NodeKey), which serve a shard of sc though no member accounts
// for them, including the previous leader's (inheritedStrays). It forgets the strays not waited for any more.
func (r *Reconciler) pendingAcks(sc *meshv1alpha1.ShardingConfig, pub Published, members []member, now time.Time) []string {
	acks := r.Publisher.Acks()
	want := version(sc, pub)
	serving := r.servingSince()
	var pending []string
	for _, m := range members {
		_, node, known := nodeOf(acks, sc.Namespace, m)
		if r.countedOut(node, known, serving, now) {
			continue
		}
		if ackedOf(sc, node, m.shard) != want {
			pending = append(pending, m.pod)
		}
	}
	r.release(sc, pub, acks)
	for _, s := range r.strays(sc, acks, members) {
		if !r.waitedFor(s, serving, now) {
			if f, ok := r.Publisher.(forgetter); ok {
				f.Forget(s.key)
				r.mu.Lock()
				delete(r.released, s.key)
				r.mu.Unlock()
			}
			continue
		}
		if ackedOf(sc, s.node, shard.ShardID(s.node.Metadata.Shard)) != want {
			pending = append(pending, xds.NodeKey(s.node.Metadata.Pod.Name, s.node.PodUID))
		}
	}
	for _, p := range r.inheritedStrays(sc, acks, members, want, serving, now) {
		pending = append(pending, xds.NodeKey(p.Pod, p.PodUID))
	}
	return pending
}

// countedOut reports whether a proxy has given up its ranges by itself, so that a handover need not wait for it:
// it has been out of contact for longer than ProxyLease and a margin for clocks and keepalives, or this manager has
// never heard from it and has served xDS (since serving) that long: were it alive, it would have connected. Before
// this replica serves (serving is zero) no silence counts, and a standby refused every proxy, so its silence from
// before its election says nothing.
func (r *Reconciler) countedOut(node xds.NodeState, known bool, serving, now time.Time) bool {
	lapsed := func(since time.Time) bool {
		return r.ProxyLease > 0 && now.Sub(since) > r.ProxyLease+r.LeaseMargin
	}
	if known {
		return !node.Connected && lapsed(node.Since)
	}
	return !serving.IsZero() && lapsed(serving)
}

// heldEpoch is the highest epoch of an ownership document of sc's name that a proxy known to the xDS server holds
// (acknowledged, or said it serves when it refused a document): one of an earlier ShardingConfig of that name, or
// of a status since lost. behind reports whether a proxy a handover waits for refused the status's own epoch as
// conflicting with one it holds of that epoch or later: the status is behind the proxies (lost, or restored from a
// backup), and the epochs must start again above theirs (see Initial). A refusal of an earlier epoch says nothing
// against the status (a new leader read a status its predecessor had moved on from), nor does one by a proxy no
// handover waits for. An
// epoch past maxHeldEpoch is not believed: no manager counts that far, and epochs must go on growing after it.
func (r *Reconciler) heldEpoch(sc *meshv1alpha1.ShardingConfig, pub Published, members []member) (held int64, behind bool) {
	key := ktypes.NamespacedName{Namespace: sc.Namespace, Name: sc.Name}
	acks := r.Publisher.Acks()
	for _, node := range acks {
		if node.Metadata.ShardingConfig != key {
			continue
		}
		for rk, ack := range node.Resources {
			if epoch, ok := epochOf(ack.Acked); ok && rk.TypeURL == xds.OwnershipType && epoch <= maxHeldEpoch {
				held = max(held, epoch)
			}
		}
	}
	// The proxies a handover waits for: the members', and the strays still waited for (see pendingAcks). A stray's
	// refusal counts too, or one holding a newer epoch than the members would be waited for for ever.
	var judged []xds.NodeState
	for _, m := range members {
		if _, node, ok := nodeOf(acks, sc.Namespace, m); ok && node.Metadata.ShardingConfig == key {
			judged = append(judged, node)
		}
	}
	serving, now := r.servingSince(), time.Now()
	for _, s := range r.strays(sc, acks, members) {
		if r.waitedFor(s, serving, now) {
			judged = append(judged, s.node)
		}
	}
	for _, node := range judged {
		ack := ackOf(sc, node, shard.ShardID(node.Metadata.Shard))
		refused, _ := epochOf(ack.Nacked)
		if epoch, ok := epochOf(ack.Acked); ok && ack.Conflict && refused == pub.Epoch && epoch >= pub.Epoch && epoch <= maxHeldEpoch {
			behind = true
		}
	}
	return held, behind
}

// maxHeldEpoch bounds the epochs heldEpoch believes.
const maxHeldEpoch = math.MaxInt64 / 2
