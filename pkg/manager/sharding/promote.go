package sharding

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/canary"
	mcanary "github.com/fedmesh/fedmesh/pkg/manager/canary"
)

// Promotion with spec.canary.promotion: the manager rolls the stable StatefulSet itself. It sets the container's
// image in the pod template and the update strategy to OnDelete (so the StatefulSet controller replaces no pod by
// itself), then deletes the pods canary.Roll names, batch by batch; the StatefulSet recreates each from the new
// template. The roll's state is status.canary.promotion, written before the pods it names are deleted, so that a
// restarted manager carries on where it was.
//
// The StatefulSet's own updateStrategy is kept in its annotation savedStrategyAnnotation when OnDelete replaces it,
// and put back when the roll is done (every pod then runs the new template, so nothing rolls) or abandoned
// (spec.canary or its promotion removed mid-roll): left on OnDelete, the next change of its template (an upgrade of
// the operator) would replace no pod. A strategy the user sets during the roll is the one kept: the manager saves
// it when it sets OnDelete again. One that is not OnDelete when the roll ends was set by someone after the manager's
// last write and stays; only the annotation goes.

// savedStrategyAnnotation holds, as JSON, the StatefulSet's updateStrategy from before the promotion set OnDelete.
const savedStrategyAnnotation = meshv1alpha1.GroupName + "/update-strategy-before-promotion"

// promotionPoll is how often a roll waiting for pods to come back is looked at again.
const promotionPoll = time.Second

// rollStable runs one step of the stable shards' roll. promoted are the images the canary was promoted with (by
// container); the roll's image is spec.canary.promotion's, or else the canary's in its container. It returns the
// promotion status to write and the pods to delete once it is written.
func (r *Reconciler) rollStable(ctx context.Context, sc *meshv1alpha1.ShardingConfig, prev *meshv1alpha1.CanaryPromotionStatus,
	pods shardPods, promoted map[string]string) (*meshv1alpha1.CanaryPromotionStatus, canary.RollResult, error) {
	spec := sc.Spec.Canary.Promotion
	st := prev.DeepCopy()
	if st == nil {
		st = &meshv1alpha1.CanaryPromotionStatus{}
	}
	if st.Done {
		return st, canary.RollResult{}, nil
	}
	if st.Image == "" {
		st.Image = spec.Image
		if st.Image == "" {
			st.Image = promoted[spec.Container]
		}
		if st.Image == "" {
			return st, canary.RollResult{RequeueAfter: canary.DefaultInterval}, fmt.Errorf(
				"spec.canary.promotion: no image, and the canary was not promoted running one image in a container %q", spec.Container)
		}
	}
	sts, err := r.setTemplateImage(ctx, sc.Namespace, spec, st.Image)
	if err != nil {
		return st, canary.RollResult{RequeueAfter: promotionPoll}, err
	}
	stablePods, err := r.stablePods(ctx, sc, sts, pods.stable, spec.Container, st.Image)
	if err != nil {
		return st, canary.RollResult{RequeueAfter: promotionPoll}, err
	}
	state := canary.RollState{Rolling: st.Rolling, BatchesDone: int(st.BatchesDone), Done: st.Done}
	if st.BatchFinishedTime != nil {
		state.BatchFinished = st.BatchFinishedTime.Time
	}
	var pause time.Duration
	if spec.Pause != nil {
		pause = spec.Pause.Duration
	}
	// The status keeps times to the second: decide with the same time the next reconcile reads back.
	next, res := canary.Roll(state, stablePods, pause, promotionPoll, time.Now().Truncate(time.Second))
	if next.Done {
		// Done only once the StatefulSet has its own strategy back: a done roll is not looked at again.
		if err := r.restoreUpdateStrategy(ctx, client.ObjectKeyFromObject(sts)); err != nil {
			return st, canary.RollResult{RequeueAfter: promotionPoll}, err
		}
	}
	st.Rolling, st.BatchesDone, st.Batches, st.Done = next.Rolling, int32(next.BatchesDone), int32(res.Batches), next.Done
	st.BatchFinishedTime = nil
	if !next.BatchFinished.IsZero() {
		st.BatchFinishedTime = &metav1.Time{Time: next.BatchFinished}
	}
	return st, res, nil
}

// setTemplateImage makes the StatefulSet's pod template run image in the container, with updateStrategy OnDelete;
// the strategy it replaces is saved in savedStrategyAnnotation.
func (r *Reconciler) setTemplateImage(ctx context.Context, namespace string, spec *meshv1alpha1.CanaryPromotion, image string) (*appsv1.StatefulSet, error) {
	key := ktypes.NamespacedName{Namespace: namespace, Name: spec.StatefulSet}
	var sts appsv1.StatefulSet
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := r.reader().Get(ctx, key, &sts); err != nil {
			return err
		}
		found, changed := false, false
		for i := range sts.Spec.Template.Spec.Containers {
			c := &sts.Spec.Template.Spec.Containers[i]
			if c.Name == spec.Container {
				found, changed = true, changed || c.Image != image
				c.Image = image
			}
		}
		if !found {
			return fmt.Errorf("statefulset %s has no container %q", key, spec.Container)
		}
		if sts.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType {
			saved, err := json.Marshal(sts.Spec.UpdateStrategy)
			if err != nil {
				return err
			}
			metav1.SetMetaDataAnnotation(&sts.ObjectMeta, savedStrategyAnnotation, string(saved))
			sts.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
			changed = true
		}
		if !changed {
			return nil
		}
		log.FromContext(ctx).Info("setting the stable StatefulSet's image for the promotion", "statefulset", key, "image", image)
		return r.Client.Update(ctx, &sts)
	})
	return &sts, err
}

// restoreUpdateStrategy gives the StatefulSet back the updateStrategy saved in savedStrategyAnnotation, if it is
// still on OnDelete, and removes the annotation. Without the annotation it changes nothing.
func (r *Reconciler) restoreUpdateStrategy(ctx context.Context, key ktypes.NamespacedName) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var sts appsv1.StatefulSet
		if err := r.reader().Get(ctx, key, &sts); err != nil {
			return client.IgnoreNotFound(err)
		}
		saved, ok := sts.Annotations[savedStrategyAnnotation]
		if !ok {
			return nil
		}
		delete(sts.Annotations, savedStrategyAnnotation)
		logger := log.FromContext(ctx).WithValues("statefulset", key)
		if sts.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
			var strategy appsv1.StatefulSetUpdateStrategy
			if err := json.Unmarshal([]byte(saved), &strategy); err != nil {
				// Edited by hand: OnDelete stays, as the StatefulSet controller reads it best.
				logger.Error(err, "the saved update strategy is unreadable; keeping OnDelete", "annotation", savedStrategyAnnotation)
			} else {
				sts.Spec.UpdateStrategy = strategy
			}
		}
		logger.Info("the promotion's roll is over; restoring the StatefulSet's update strategy", "updateStrategy", sts.Spec.UpdateStrategy.Type)
		return r.Client.Update(ctx, &sts)
	})
}

// abandonRoll restores the update strategy of the stable pods' StatefulSets after a roll that stopped before it was
// done (spec.canary or its promotion removed). The spec no longer names the StatefulSet: the pods' owners do.
func (r *Reconciler) abandonRoll(ctx context.Context, namespace string, stable []corev1.Pod) error {
	seen := map[string]bool{}
	for i := range stable {
		owner := metav1.GetControllerOf(&stable[i])
		if owner == nil || owner.Kind != "StatefulSet" || owner.APIVersion != appsv1.SchemeGroupVersion.String() || seen[owner.Name] {
			continue
		}
		seen[owner.Name] = true
		if err := r.restoreUpdateStrategy(ctx, ktypes.NamespacedName{Namespace: namespace, Name: owner.Name}); err != nil {
			return fmt.Errorf("restoring the update strategy of statefulset %s after the promotion stopped: %w", owner.Name, err)
		}
	}
	return nil
}

// stablePods are the StatefulSet's pods (<name>-0 .. <name>-<replicas-1>) as the roll sees them: which run image,
// which are ready, which hold their shard's Lease.
func (r *Reconciler) stablePods(ctx context.Context, sc *meshv1alpha1.ShardingConfig, sts *appsv1.StatefulSet,
	live []corev1.Pod, container, image string) ([]canary.StablePod, error) {
	byName := map[string]*corev1.Pod{}
	for i := range live {
		byName[live[i].Name] = &live[i]
	}
	label := ordinalLabel(sc)
	holders := map[int]string{}
	holder := func(shard int) (string, error) {
		if h, ok := holders[shard]; ok || sc.Spec.LeaderElection == nil {
			return h, nil
		}
		le := sc.Spec.LeaderElection
		ns := le.LeaseNamespace
		if ns == "" {
			ns = sc.Namespace
		}
		// The proxies rename the operator's Lease per shard; see spec.leaderElection.
		var lease coordinationv1.Lease
		err := r.reader().Get(ctx, ktypes.NamespacedName{Namespace: ns, Name: fmt.Sprintf("%s-shard-%d", le.LeaseName, shard)}, &lease)
		if err != nil && !apierrors.IsNotFound(err) {
			return "", err
		}
		if lease.Spec.HolderIdentity != nil {
			holders[shard] = *lease.Spec.HolderIdentity
		}
		return holders[shard], nil
	}
	replicas := 1
	if sts.Spec.Replicas != nil {
		replicas = int(*sts.Spec.Replicas)
	}
	out := make([]canary.StablePod, 0, replicas)
	for i := range replicas {
		name := fmt.Sprintf("%s-%d", sts.Name, i)
		sp := canary.StablePod{Name: name, Shard: i}
		p := byName[name]
		if p == nil {
			sp.Missing = true
			out = append(out, sp)
			continue
		}
		if n, err := strconv.Atoi(p.Labels[label]); err == nil {
			sp.Shard = n
		}
		h, err := holder(sp.Shard)
		if err != nil {
			return nil, err
		}
		// Leader-election identities are the pod's name, often with a suffix ("op-0_3f2a...").
		sp.Leader = h != "" && (h == name || strings.HasPrefix(h, name+"_"))
		sp.Updated = mcanary.Images(p)[container] == image
		sp.Ready = podReady(p)
		sp.Terminating = p.DeletionTimestamp != nil
		out = append(out, sp)
	}
	return out, nil
}

// deleteStablePods deletes the pods the roll named, each only if it is still the pod that was judged (same UID):
// its StatefulSet may have replaced it meanwhile.
func (r *Reconciler) deleteStablePods(ctx context.Context, namespace string, pods map[string]ktypes.UID) error {
	for name, uid := range pods {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
		err := r.Client.Delete(ctx, pod, client.Preconditions{UID: &uid})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting stable pod %s for the promotion: %w", name, err)
		}
	}
	return nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
