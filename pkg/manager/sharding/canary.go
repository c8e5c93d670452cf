package sharding

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	ktypes "k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/canary"
	mcanary "github.com/fedmesh/fedmesh/pkg/manager/canary"
	"github.com/fedmesh/fedmesh/pkg/shard"
)

// The canary, in the controller's terms:
//   - The canary shard is shard spec.shards; its members are the pods of spec.canary.selector. Their proxies get
//     an ownership document like any shard's and must acknowledge every step like any shard's.
//   - The stable shards' own assignment (without the canary) is kept in status.canary.stableAssignment, so that
//     the canary's namespaces return to the shards they came from; the assignment to publish is
//     canary.CanaryAssignment of it, reached through the same revoke, acknowledge, grant steps as any handover.
//   - The rollout's State is status.canary; the set the canary is to own is status.canary.ranges (during a
//     handover the published assignment does not give it to the canary yet).
//   - Removing spec.canary mid-rollout returns its namespaces like a rollback: while the status records the canary
//     (until its shard owns nothing and every proxy acknowledged that), its shard still gets its document, and its
//     pods, found by their ordinal label now that the selector is gone, stay members whose proxies must
//     acknowledge the revoke before the grant (members, shardsOf).
//   - spec.shards cannot change while a canary is set (the API refuses it): the canary pods carry ordinal spec.shards.
//   - On Promote, with spec.canary.promotion the manager rolls the stable StatefulSet (promote.go) and the stable
//     shards count as rolled out when status.canary.promotion.done; without it, when every stable pod runs the
//     images the canary pods ran when it was promoted (status.canary.images), whoever changed them, whether or not
//     a canary pod is left.

// observer is the Reconciler's Observer, made on first use.
func (r *Reconciler) observer() *mcanary.Observer {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Observer == nil {
		r.Observer = &mcanary.Observer{}
	}
	return r.Observer
}

// stableTarget is where the stable shards should end up: from their own assignment while a canary is recorded in
// the status, else from the published one.
func stableTarget(sc *meshv1alpha1.ShardingConfig, pub Published, shards []shard.ShardID, namespaces []string) shard.Assignment {
	base := pub
	if cs := sc.Status.Canary; cs != nil && len(cs.StableAssignment) > 0 {
		if a, err := shard.ParseStatusAssignment(cs.StableAssignment); err == nil {
			base = Published{Epoch: pub.Epoch, Assignment: a}
		}
	}
	return Target(base, shards, namespaces)
}

// rolloutResult is what one reconcile decided about the canary: the assignment to reach, the status to write, and
// what to record once it is written.
type rolloutResult struct {
	target  shard.Assignment
	status  *meshv1alpha1.CanaryStatus // nil: status.canary goes, or stays absent
	events  []canary.Event
	requeue time.Duration
	step    *int32 // the API's current step, for the metric
	// rollback is the cause of a rollback in this step (rollbackAnalysis, rollbackAction), "" for none.
	rollback string
	// deletePods are stable pods to delete for the promotion once the status is written, by name and UID.
	deletePods map[string]ktypes.UID
}

// act does what the rollout decided beyond the status, once the status is written.
func (ro rolloutResult) act(ctx context.Context, r *Reconciler, sc *meshv1alpha1.ShardingConfig) error {
	if len(ro.deletePods) == 0 {
		return nil
	}
	return r.deleteStablePods(ctx, sc.Namespace, ro.deletePods)
}

// record emits the events and metrics of a rollout step whose status was written.
func (ro rolloutResult) record(r *Reconciler, sc *meshv1alpha1.ShardingConfig) {
	key := sc.Namespace + "/" + sc.Name
	for _, e := range ro.events {
		r.Recorder.Eventf(sc, e.Type, e.Reason, "%s", e.Message)
	}
	switch {
	case ro.status == nil:
		// status.canary is gone (or never was): the step of a canary that no longer exists must not be reported.
		canaryStep.DeleteLabelValues(key)
	case ro.step != nil:
		canaryStep.WithLabelValues(key).Set(float64(*ro.step))
	}
	if ro.rollback != "" {
		canaryRollbacks.WithLabelValues(key, ro.rollback).Inc()
	}
}

// The causes of a canary rollback, as the rollbacks metric tells them.
const (
	rollbackAnalysis = "analysis" // a failed analysis
	rollbackAction   = "action"   // the action Rollback
)

// rollbackCause is the cause of the rollback the events of a step tell, "" when they tell none.
func rollbackCause(events []canary.Event) string {
	for _, e := range events {
		switch e.Reason {
		case "AnalysisFailed":
			return rollbackAnalysis
		case "RolledBack":
			return rollbackAction
		}
	}
	return ""
}

// rollout runs one step of the canary rollout. acked says whether every live proxy acknowledged pub.
func (r *Reconciler) rollout(ctx context.Context, sc *meshv1alpha1.ShardingConfig, pub Published, acked bool,
	stable shard.Assignment, pods shardPods, namespaces []string) rolloutResult {
	logger := log.FromContext(ctx)
	key := client.ObjectKeyFromObject(sc).String()
	canaryShard := canaryShardOf(sc)
	if sc.Spec.Canary == nil {
		// No canary (any more): every namespace goes to the stable shards; the record goes once none is left on the
		// canary shard.
		r.observer().Forget(key)
		st := sc.Status.Canary.DeepCopy()
		if st == nil {
			return rolloutResult{target: stable}
		}
		var requeue time.Duration
		if st.Promotion != nil && !st.Promotion.Done {
			// The record of the roll stays until the StatefulSet has its strategy back.
			if err := r.abandonRoll(ctx, sc.Namespace, pods.stable); err != nil {
				logger.Error(err, "the promotion stopped")
				requeue = promotionPoll
			} else {
				st.Promotion = nil
			}
		}
		if requeue == 0 && acked && pub.Assignment[canaryShard].Empty() {
			return rolloutResult{target: stable}
		}
		st.Ranges, st.StableAssignment = nil, shard.StatusAssignment(stable)
		return rolloutResult{target: stable, status: st, requeue: requeue}
	}

	prev := sc.Status.Canary
	var canarySet shard.Set
	if prev != nil {
		set, err := shard.ParseStatusRanges(prev.Ranges)
		if err != nil {
			logger.Error(err, "status.canary.ranges unreadable; the canary's set is what it owns")
			set = pub.Assignment[canaryShard]
		}
		canarySet = set
	}
	plan, err := canary.FromSpec(sc.Spec.Canary)
	if err != nil {
		// Hold where the rollout is; the API's validation should not let this happen.
		st := prev.DeepCopy()
		if st == nil {
			st = &meshv1alpha1.CanaryStatus{}
		}
		st.StableAssignment = shard.StatusAssignment(stable)
		ev := canary.Event{Type: canary.EventWarning, Reason: "InvalidCanary", Message: "spec.canary: " + err.Error() + "; the rollout holds"}
		target := shard.Reassign(stable, canarySet, canaryShard)
		if canarySet.Empty() {
			target = stable
		}
		return rolloutResult{target: target, status: st, events: []canary.Event{ev}, requeue: canary.DefaultInterval}
	}

	state := plan.Restore(prev, canarySet)
	owned := pub.Assignment[canaryShard]
	if !acked {
		// Not every proxy has the published assignment yet: any set other than the State's says "not handed over".
		owned = state.Canary.Complement()
	}
	m, err := r.observer().Observe(ctx, key, state.StepStart, pods.canary)
	if err != nil {
		logger.Info("canary observation incomplete", "error", err.Error())
	}
	// The canary's version as promoted, kept in the status: by the time the stable pods run it the canary's pods may
	// be gone, and its namespaces must not wait for them.
	promoted := mcanary.CommonImages(pods.canary)
	if prev != nil && len(prev.Images) > 0 {
		promoted = prev.Images
	}
	obs := canary.Observation{
		Owned: owned, Requests: m.Requests, Errors: m.Errors, BreakerTrips: m.BreakerTrips, Restarts: m.Restarts,
		Ready: m.Ready, Total: m.Total, Action: sc.Spec.Canary.Action,
		// Every shard with a pod too: one whose old pod is going and whose new one is not there yet has not
		// rolled out, and the canary's namespaces must not go back to it yet.
		StableRolledOut: mcanary.RunImages(pods.stable, promoted) && pods.everyShard(int(sc.Spec.Shards)),
		Unmeasured:      m.Unmeasured,
		MeasuredSince:   m.MeasuredSince,
	}
	promotion := sc.Spec.Canary.Promotion
	var promo *meshv1alpha1.CanaryPromotionStatus
	if prev != nil {
		promo = prev.Promotion
	}
	var abandonErr error
	if promotion == nil && promo != nil && !promo.Done {
		// spec.canary.promotion went mid-roll: the StatefulSet gets its strategy back, and whoever rolls it now
		// decides when the stable shards are rolled out.
		if abandonErr = r.abandonRoll(ctx, sc.Namespace, pods.stable); abandonErr != nil {
			logger.Error(abandonErr, "the promotion stopped")
		} else {
			promo = nil
		}
	}
	if promotion != nil {
		// The manager rolls the stable shards itself: they are rolled out when its roll says so.
		obs.StableRolledOut = promo != nil && promo.Done
	}
	now := time.Now()
	next, res := canary.Step(plan, state, obs, now)
	if abandonErr != nil {
		res.Events = append(res.Events, canary.Event{Type: canary.EventWarning, Reason: "RollFailed", Message: abandonErr.Error()})
		res.RequeueAfter = minRequeue(res.RequeueAfter, promotionPoll)
	}
	var deletePods map[string]ktypes.UID
	if res.Promote && promotion != nil {
		var roll canary.RollResult
		promo, roll, err = r.rollStable(ctx, sc, promo, pods, promoted)
		if err != nil {
			logger.Error(err, "rolling the stable shards")
			res.Events = append(res.Events, canary.Event{Type: canary.EventWarning, Reason: "RollFailed", Message: err.Error()})
		}
		res.Events = append(res.Events, roll.Events...)
		res.RequeueAfter = minRequeue(res.RequeueAfter, roll.RequeueAfter)
		uids := map[string]ktypes.UID{}
		for _, p := range pods.stable {
			uids[p.Name] = p.UID
		}
		for _, name := range roll.Delete {
			if deletePods == nil {
				deletePods = map[string]ktypes.UID{}
			}
			deletePods[name] = uids[name]
		}
		if promo.Done {
			// Rolled out in this reconcile: release the canary's namespaces now rather than at the next one.
			obs.StableRolledOut = true
			var again canary.Result
			next, again = canary.Step(plan, next, obs, now)
			res.Events = append(res.Events, again.Events...)
			res.Canary, res.Promote, res.Finished = again.Canary, again.Promote, again.Finished
			res.RequeueAfter = minRequeue(res.RequeueAfter, again.RequeueAfter)
		}
	}
	// The status keeps the step's start to the second: keep the same time in memory, so that the baselines below
	// are those the next reconcile finds.
	next.StepStart = next.StepStart.Truncate(time.Second)
	if !next.StepStart.IsZero() && !next.StepStart.Equal(state.StepStart) {
		// A step's window begins: take the baselines now rather than at the next reconcile.
		if _, err := r.observer().Observe(ctx, key, next.StepStart, pods.canary); err != nil {
			logger.Info("canary baseline incomplete", "error", err.Error())
		}
	}

	st := plan.Status(next)
	st.Ranges = shard.StatusRanges(next.Canary)
	st.StableAssignment = shard.StatusAssignment(stable)
	if next.Phase == canary.Promoted {
		st.Promotion, st.Images = promo, promoted
	}
	for _, ns := range namespaces {
		if pub.Assignment[canaryShard].ContainsNamespace(ns) {
			st.Namespaces++
		}
	}
	ro := rolloutResult{
		target:  canary.CanaryAssignment(stable, canaryShard, next),
		status:  &st,
		events:  res.Events,
		requeue: res.RequeueAfter,
		step:    &st.CurrentStep,

		deletePods: deletePods,
		rollback:   rollbackCause(res.Events),
	}
	for _, e := range res.Events {
		if e.Reason == "Promoted" && promotion == nil {
			ro.events = append(ro.events, canary.Event{Type: canary.EventNormal, Reason: "RollStableShards", Message: fmt.Sprintf(
				"roll the stable shards' pods to the canary's images (%s), one shard at a time, non-leaders before the leader; "+
					"the canary keeps its namespaces until every stable pod runs them", images(pods.canary))})
		}
	}
	return ro
}

// images describes the canary pods' images, e.g. "op=operator:v2".
func images(pods []corev1.Pod) string {
	if len(pods) == 0 {
		return "no canary pod"
	}
	imgs := mcanary.Images(&pods[0])
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(imgs)) {
		parts = append(parts, name+"="+imgs[name])
	}
	return strings.Join(parts, ", ")
}

// minRequeue is the sooner of two requeues, 0 meaning none.
func minRequeue(a, b time.Duration) time.Duration {
	if a == 0 || b != 0 && b < a {
		return b
	}
	return a
}
