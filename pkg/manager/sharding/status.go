package sharding

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/shard"
)

// published reads what the status says the proxies were told.
func published(st *meshv1alpha1.ShardingConfigStatus) (Published, error) {
	a, err := shard.ParseStatusAssignment(st.Assignment)
	if err != nil {
		return Published{}, err
	}
	return Published{Epoch: st.Epoch, Assignment: a}, nil
}

// writeStatus records pub, the shards' namespaces, the proxies' acknowledgements, the conditions and the canary's
// progress, provided the stored object is still sc's resourceVersion: else it fails with a conflict. done says
// that pub is the step the spec asks for, and pending are the proxies it waits for (pendingAcks).
//
// Of a member this replica has not heard from, the status keeps what it said before (what the proxy acknowledged
// or refused, told by the previous leader) while it is awaited (not counted out) if the status named its pod's UID
// (a pod recreated under the name runs a new proxy that acknowledged nothing): a new leader knows none of the
// proxies until they reconnect, and blanking their versions would tell of a change that did not happen. The
// previous leader's strays still waited for (inheritedStrays) are kept too: the status is their only record.
func (r *Reconciler) writeStatus(ctx context.Context, sc *meshv1alpha1.ShardingConfig, pub Published, members []member, namespaces []string, done bool, pending []string, canaryStatus *meshv1alpha1.CanaryStatus) error {
	orig := sc.DeepCopy()
	st := &sc.Status
	st.Canary = canaryStatus
	st.ObservedGeneration = sc.Generation
	st.Epoch = pub.Epoch
	perShard := map[shard.ShardID]int32{}
	for _, ns := range namespaces {
		if owner, ok := pub.Assignment.NamespaceOwner(ns); ok {
			perShard[owner]++
		}
	}
	objects := map[shard.ShardID]int64{}
	perNS, counted := r.objects.perNamespace(ctx, sc)
	for ns, n := range perNS {
		if owner, ok := pub.Assignment.NamespaceOwner(ns); ok {
			objects[owner] += n
		}
	}
	st.Assignment = nil
	for _, sid := range shardsOf(sc, pub, members) {
		id := int32(sid)
		sa := meshv1alpha1.ShardAssignment{Shard: id, Namespaces: perShard[sid], Ranges: shard.StatusRanges(pub.Assignment[sid]),
			Canary: sc.Spec.Canary != nil && sid == canaryShardOf(sc), Objects: objects[sid]}
		st.Assignment = append(st.Assignment, sa)
	}
	setShardGauges(sc.Namespace+"/"+sc.Name, st.Assignment, counted)
	epochGauge.WithLabelValues(sc.Namespace + "/" + sc.Name).Set(float64(pub.Epoch))

	traffic, err := r.traffic(ctx, sc)
	if err != nil {
		return err
	}
	acks := r.Publisher.Acks()
	want := version(sc, pub)
	serving, now := r.servingSince(), time.Now()
	st.Proxies, st.ReadyProxies = nil, 0
	var trafficRefused string
	unheard := map[string]bool{} // the members this replica has not heard from, by pod
	current := map[string]bool{} // the members known to have acknowledged want, by pod
	fresh := map[string]bool{}   // the members whose pods were created after this replica's election, by pod
	for _, m := range members {
		_, node, known := nodeOf(acks, sc.Namespace, m)
		ack, tack := ackOf(sc, node, m.shard), trafficAckOf(sc, node, m.shard)
		ps := meshv1alpha1.ProxyStatus{Pod: m.pod, Shard: int32(m.shard), PodUID: m.uid, AckedVersion: ack.Acked,
			NackReason: ack.Error, TrafficNackReason: tack.Error}
		prev := previousProxy(orig, m.pod)
		older := serving.IsZero() || m.created.Before(serving)
		fresh[m.pod] = !older
		if !known {
			unheard[m.pod] = true
			if older && m.uid != "" && prev.PodUID == m.uid && !r.countedOut(node, false, serving, now) {
				ps.AckedVersion, ps.NackReason, ps.TrafficNackReason = prev.AckedVersion, prev.NackReason, prev.TrafficNackReason
			}
		}
		if ps.AckedVersion == want {
			st.ReadyProxies++
			current[m.pod] = true
		}
		if ack.Error != "" && ack.Nacked != "" && ack.Error != prev.NackReason {
			nacks.WithLabelValues(sc.Namespace + "/" + sc.Name).Inc()
			r.Recorder.Eventf(sc, corev1.EventTypeWarning, "ProxyRefused", "proxy of pod %s refused version %s: %s", m.pod, ack.Nacked, ack.Error)
		}
		if tack.Error != "" && tack.Nacked != "" && tack.Error != prev.TrafficNackReason {
			nacks.WithLabelValues(sc.Namespace + "/" + sc.Name).Inc()
			r.Recorder.Eventf(sc, corev1.EventTypeWarning, "ProxyRefused", "proxy of pod %s refused traffic policy version %s: %s", m.pod, tack.Nacked, tack.Error)
		}
		if tack.Error != "" && tack.Nacked == traffic.version && trafficRefused == "" {
			trafficRefused = fmt.Sprintf("the proxy of pod %s: %s", m.pod, tack.Error)
		}
		st.Proxies = append(st.Proxies, ps)
	}
	r.setTrafficCondition(sc, orig, trafficCondition(sc, traffic, trafficRefused))
	// The strays a handover waits for: otherwise a handover held up by one would name no proxy that holds it.
	strays := 0
	for _, s := range r.strays(sc, acks, members) {
		if !r.waitedFor(s, serving, now) {
			continue
		}
		id := shard.ShardID(s.node.Metadata.Shard)
		ack := ackOf(sc, s.node, id)
		ps := meshv1alpha1.ProxyStatus{Pod: s.node.Metadata.Pod.Name, Shard: int32(id), Stray: true, PodUID: s.node.PodUID,
			AckedVersion: ack.Acked, NackReason: ack.Error, TrafficNackReason: trafficAckOf(sc, s.node, id).Error}
		if ps.AckedVersion != want {
			strays++
		}
		st.Proxies = append(st.Proxies, ps)
	}
	for _, ps := range r.inheritedStrays(orig, acks, members, want, serving, now) {
		strays++
		st.Proxies = append(st.Proxies, ps)
	}
	sort.Slice(st.Proxies, func(i, j int) bool {
		a, b := st.Proxies[i], st.Proxies[j]
		if a.Pod != b.Pod {
			return a.Pod < b.Pod
		}
		return !a.Stray && b.Stray || a.Stray == b.Stray && a.PodUID < b.PodUID
	})

	cond, progressing := stepConditions(pub.Epoch, stepProxies{
		members: len(members), acked: int(st.ReadyProxies), strays: strays, done: done, pending: pending,
		unheard: unheard, current: current, fresh: fresh,
	})
	cond.ObservedGeneration, progressing.ObservedGeneration = sc.Generation, sc.Generation
	// A shard owning ranges with no pod serves nobody: the most urgent thing to tell, since only the user can fix it.
	if idle := unserved(pub.Assignment, members); len(idle) > 0 {
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonShardUnserved
		cond.Message = unservedMessage(sc, idle, perShard)
		if prev := meta.FindStatusCondition(orig.Status.Conditions, "Ready"); prev == nil || prev.Reason != cond.Reason {
			r.Recorder.Eventf(sc, corev1.EventTypeWarning, ReasonShardUnserved, "%s", cond.Message)
		}
	}
	meta.SetStatusCondition(&st.Conditions, cond)
	meta.SetStatusCondition(&st.Conditions, progressing)
	// Only over the status it was computed from: one read from a lagging cache, or by a second manager before the
	// election settles, would move the epoch or the canary back. A conflict is reconciled again (Reconcile).
	if err := r.Client.Status().Patch(ctx, sc, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return err
	}
	r.wrote(sc)
	return nil
}

// describe says which ranges change hands between two assignments.
func describe(from, to shard.Assignment) string {
	var parts []string
	for _, m := range shard.Diff(from, to) {
		parts = append(parts, m.String())
	}
	if len(parts) == 0 {
		return "no change"
	}
	return strings.Join(parts, "; ")
}

// previousProxy is what the status already reports of pod's proxy (its refusals), so each refusal is counted and
// told once.
func previousProxy(sc *meshv1alpha1.ShardingConfig, pod string) meshv1alpha1.ProxyStatus {
	for _, p := range sc.Status.Proxies {
		if p.Pod == pod && !p.Stray {
			return p
		}
	}
	return meshv1alpha1.ProxyStatus{}
}

// ReasonShardUnserved: a shard owns namespaces but has no live pod, so nobody reconciles them.
const ReasonShardUnserved = "ShardUnserved"

// unserved are the shards that own hash ranges but have no live pod, in ascending order.
func unserved(a shard.Assignment, members []member) []shard.ShardID {
	served := map[shard.ShardID]bool{}
	for _, m := range members {
		served[m.shard] = true
	}
	var out []shard.ShardID
	for _, id := range a.Shards() {
		if !served[id] {
			out = append(out, id)
		}
	}
	return out
}

// unservedMessage says which shards serve nobody, what that costs, and what to do about it.
func unservedMessage(sc *meshv1alpha1.ShardingConfig, idle []shard.ShardID, namespaces map[shard.ShardID]int32) string {
	var names []string
	var lost int32
	for _, id := range idle {
		names = append(names, fmt.Sprint(id))
		lost += namespaces[id]
	}
	label := ordinalLabel(sc)
	msg := fmt.Sprintf("shard(s) %s have no live pod, so nothing reconciles their %d namespace(s): run the operator's "+
		"pods for all %d shards (spec.shards), matching spec.selector and labelled %s with their shard's ordinal",
		strings.Join(names, ", "), lost, sc.Spec.Shards, label)
	if sc.Spec.Canary != nil && slices.Contains(idle, canaryShardOf(sc)) {
		msg += fmt.Sprintf("; the canary (shard %d) needs pods matching spec.canary.selector", canaryShardOf(sc))
	}
	return msg
}
