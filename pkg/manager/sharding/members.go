package sharding

import (
	"context"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	ktypes "k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/shard"
	"github.com/fedmesh/fedmesh/pkg/webhook/inject"
)

// member is a pod whose proxy serves a shard.
type member struct {
	pod   string
	shard shard.ShardID
	uid   ktypes.UID // the pod's: its proxy's record is keyed by it where the token names it (xds.NodeKey)
	// created is when the pod was: one created after this replica's election cannot have acknowledged anything to
	// the previous leader (see writeStatus).
	created time.Time
}

// members are the pods whose proxies serve a shard of sc; pods are those that form the shards and the canary.
//
// A pod is a member until it is gone, terminating or not: its proxy is a native sidecar that outlives the
// operator's containers during the grace period, and must acknowledge losing its ranges before anyone else gets
// them (a proxy already gone is counted out after the lease, see countedOut). Only a finished pod is not. The
// members are the pods of spec.selector with an ordinal, of a shard beyond spec.shards too; the pods of
// spec.canary.selector (not matching spec.selector), of the canary shard; and once spec.canary is gone, its pods
// as long as they may still own something (formerCanaryMembers). pods leaves out the terminating ones: the rollout
// measures and rolls the pods that stay.
//
// While spec.canary is set, a pod of spec.selector whose ordinal is spec.shards, the canary's shard, is no member:
// it runs the stable version and would pass for the canary's (serving its shard, counted in its status). Its proxy
// takes its shard from the label and so does read the canary's document: as a proxy the xDS server knows, it is
// still waited for (pendingAcks, strays).
func (r *Reconciler) members(ctx context.Context, sc *meshv1alpha1.ShardingConfig, pub Published) ([]member, shardPods, error) {
	var pods shardPods
	sel, err := metav1.LabelSelectorAsSelector(&sc.Spec.Selector)
	if err != nil {
		return nil, pods, err
	}
	var list corev1.PodList
	if err := r.Client.List(ctx, &list, client.InNamespace(sc.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, pods, err
	}
	label := ordinalLabel(sc)
	var out []member
	for _, p := range list.Items {
		// A pod of a shard beyond spec.shards is still a member until it is gone: its proxy must acknowledge
		// losing its ranges before anyone else gets them.
		ordinal, err := strconv.Atoi(p.Labels[label])
		if err != nil || ordinal < 0 || podFinished(&p) {
			continue
		}
		if sc.Spec.Canary != nil && shard.ShardID(ordinal) == canaryShardOf(sc) {
			log.FromContext(ctx).Info("a pod of spec.selector has the canary's shard as its ordinal: not counted as a member",
				"pod", p.Name, "ordinal", ordinal)
			continue
		}
		out = append(out, member{pod: p.Name, shard: shard.ShardID(ordinal), uid: p.UID, created: p.CreationTimestamp.Time})
		if ordinal < int(sc.Spec.Shards) && p.DeletionTimestamp == nil {
			pods.stable = append(pods.stable, p)
			if pods.stableShards == nil {
				pods.stableShards = map[int]bool{}
			}
			pods.stableShards[ordinal] = true
		}
	}
	if sc.Spec.Canary == nil {
		former, err := r.formerCanaryMembers(ctx, sc, pub, sel)
		if err != nil {
			return nil, pods, err
		}
		return append(out, former...), pods, nil
	}
	csel, err := metav1.LabelSelectorAsSelector(&sc.Spec.Canary.Selector)
	if err != nil {
		return nil, pods, err
	}
	list = corev1.PodList{}
	if err := r.Client.List(ctx, &list, client.InNamespace(sc.Namespace), client.MatchingLabelsSelector{Selector: csel}); err != nil {
		return nil, pods, err
	}
	for _, p := range list.Items {
		if podFinished(&p) || sel.Matches(labels.Set(p.Labels)) { // a pod of both selectors is a stable pod
			continue
		}
		out = append(out, member{pod: p.Name, shard: canaryShardOf(sc), uid: p.UID, created: p.CreationTimestamp.Time})
		if p.DeletionTimestamp == nil {
			pods.canary = append(pods.canary, p)
		}
	}
	return out, pods, nil
}

// formerCanaryMembers are, once spec.canary is gone, the pods (outside spec.selector) of the shards of
// formerCanaryShards: those of sc (their ShardingConfig annotation) labeled with such a shard, from which label an
// injected proxy takes its shard, and those whose proxies announced one.
func (r *Reconciler) formerCanaryMembers(ctx context.Context, sc *meshv1alpha1.ShardingConfig, pub Published,
	stable labels.Selector) ([]member, error) {
	former := formerCanaryShards(sc, pub)
	if len(former) == 0 {
		return nil, nil
	}
	values := make([]string, len(former))
	for i, id := range former {
		values[i] = strconv.Itoa(int(id))
	}
	label := ordinalLabel(sc)
	req, err := labels.NewRequirement(label, selection.In, values)
	if err != nil {
		return nil, err
	}
	var list corev1.PodList
	if err := r.Client.List(ctx, &list, client.InNamespace(sc.Namespace), client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(*req)}); err != nil {
		return nil, err
	}
	var out []member
	found := map[string]bool{}
	key := client.ObjectKeyFromObject(sc)
	for _, p := range list.Items {
		if podFinished(&p) || stable.Matches(labels.Set(p.Labels)) { // a pod of spec.selector is a stable member
			continue
		}
		// Any StatefulSet's pods carry the ordinal label: only a pod whose proxy serves sc is sc's member.
		if of, err := inject.ShardingConfig(&p); err != nil || of != key {
			continue
		}
		ordinal, _ := strconv.Atoi(p.Labels[label]) // the requirement matched one of former
		out = append(out, member{pod: p.Name, shard: shard.ShardID(ordinal), uid: p.UID, created: p.CreationTimestamp.Time})
		found[p.Name] = true
	}
	for _, node := range r.Publisher.Acks() {
		md := node.Metadata
		if md.ShardingConfig != key || md.Pod.Namespace != sc.Namespace || found[md.Pod.Name] ||
			!slices.Contains(former, shard.ShardID(md.Shard)) {
			continue
		}
		var p corev1.Pod
		if err := r.Client.Get(ctx, md.Pod, &p); apierrors.IsNotFound(err) {
			continue
		} else if err != nil {
			return nil, err
		}
		if podFinished(&p) || stable.Matches(labels.Set(p.Labels)) {
			continue
		}
		out = append(out, member{pod: p.Name, shard: shard.ShardID(md.Shard), uid: p.UID, created: p.CreationTimestamp.Time})
		found[p.Name] = true
	}
	return out, nil
}

// podFinished reports whether all of p's containers, its proxy among them, have exited for good.
func podFinished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// formerCanaryShards are, once spec.canary is gone, the shards whose canary pods may still own namespaces: the
// canary shard while the status records a canary, and any shard beyond spec.shards that pub gives ranges to. Their
// pods are found by their ordinal label, from which their proxies take the shard they serve.
func formerCanaryShards(sc *meshv1alpha1.ShardingConfig, pub Published) []shard.ShardID {
	var ids []shard.ShardID
	if sc.Status.Canary != nil {
		ids = append(ids, canaryShardOf(sc))
	}
	for _, id := range pub.Assignment.Shards() {
		if id >= shard.ShardID(sc.Spec.Shards) {
			ids = append(ids, id)
		}
	}
	return sortedUnique(ids)
}
