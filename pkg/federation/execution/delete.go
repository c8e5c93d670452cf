package execution

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/member"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/workrecord"
)

// finalize removes a deleted Work's objects from its member (or releases them when the Work preserves them) and
// then lets the Work go. A member that cannot be reached is retried with backoff for as long as its Cluster
// exists; once the Cluster is gone, or being deleted with nothing holding it for the cleanup, there is nothing
// left to clean with, and the Work goes. kubectl-fedmesh unjoin holds it (UnjoinFinalizer) until the Works are gone,
// or until it gives up. A Cluster in Pull mode is never reached: its Works go at once, as those of a gone one. A
// Cluster that is not Ready is not tried: the cleanup waits for it to be Ready again, or to go. One being deleted
// is tried all the same while unjoin holds it: the cluster stage no longer probes it, so it would never be Ready.
func (r *Reconciler) finalize(ctx context.Context, work *workv1alpha1.Work) (ctrl.Result, error) {
	key := client.ObjectKeyFromObject(work)
	if !controllerutil.ContainsFinalizer(work, names.ExecutionFinalizer) {
		r.waits.end(key)
		return ctrl.Result{}, nil
	}
	c, err := r.clusterOf(ctx, work.Spec.ClusterName)
	if err != nil {
		return ctrl.Result{}, err
	}
	if down := cleanupAwaits(c); down != nil {
		// Not tried, as an apply is not (notReadyOf). The Cluster turning Ready, or going, brings the Work back
		// (clusterCameOrWent); until then there is nothing new to tell.
		if r.waits.start(work) {
			r.Recorder.Eventf(work, corev1.EventTypeWarning, "CleanupFailed",
				"cluster %s is not Ready (%s): the Work's objects are removed from it once it is", work.Spec.ClusterName, down.Reason)
		}
		return ctrl.Result{}, nil
	}
	r.waits.end(key)
	switch {
	case c != nil && c.Spec.SyncMode == clusterv1alpha1.Pull:
		log.FromContext(ctx).Info("cluster is in Pull mode, which the federation does not reach; its objects are not cleaned up",
			"cluster", work.Spec.ClusterName)
	case notReady(c) != nil && goneForCleanup(c):
		log.FromContext(ctx).Info("cluster is being deleted and not Ready; its objects are not cleaned up", "cluster", work.Spec.ClusterName)
	default:
		if err := r.removeAll(ctx, work); err != nil {
			gone, gerr := r.clusterGone(ctx, work.Spec.ClusterName)
			if gerr != nil {
				return ctrl.Result{}, gerr
			}
			if !gone {
				r.Recorder.Eventf(work, corev1.EventTypeWarning, "CleanupFailed",
					"removing the Work's objects from cluster %s: %v", work.Spec.ClusterName, err)
				return ctrl.Result{}, err
			}
			log.FromContext(ctx).Info("cluster is gone; its objects are not cleaned up", "cluster", work.Spec.ClusterName, "error", err.Error())
		}
	}
	patch := client.MergeFromWithOptions(work.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(work, names.ExecutionFinalizer)
	return ctrl.Result{}, client.IgnoreNotFound(r.Client.Patch(ctx, work, patch))
}

// clusterOf is the Cluster called name; nil when there is none.
func (r *Reconciler) clusterOf(ctx context.Context, name string) (*clusterv1alpha1.Cluster, error) {
	var c clusterv1alpha1.Cluster
	err := r.Client.Get(ctx, types.NamespacedName{Name: name}, &c)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// clusterGone reports whether the Cluster called name is gone for its Works' cleanup (goneForCleanup).
func (r *Reconciler) clusterGone(ctx context.Context, name string) (bool, error) {
	c, err := r.clusterOf(ctx, name)
	if err != nil {
		return false, err
	}
	return goneForCleanup(c), nil
}

// goneForCleanup reports whether c (nil: deleted) is deleted, being deleted and not held for its Works' cleanup, or in Pull
// mode (turned so since the Work's objects were applied): none of them can be reached to clean up.
func goneForCleanup(c *clusterv1alpha1.Cluster) bool {
	if c == nil {
		return true
	}
	deleted := !c.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(c, names.UnjoinFinalizer)
	return deleted || c.Spec.SyncMode == clusterv1alpha1.Pull
}

// pullMode reports whether the Cluster is in Pull mode. fedmesh ships no agent for one: the federation never
// reaches it (member.Factory refuses a client for it), so nothing of a Work is applied there, or cleaned up. A
// Cluster that does not exist is not.
func (r *Reconciler) pullMode(ctx context.Context, name string) (bool, error) {
	c, err := r.clusterOf(ctx, name)
	return c != nil && c.Spec.SyncMode == clusterv1alpha1.Pull, err
}

// pullModeError is what a pass over a Work of a Pull cluster reports.
func pullModeError(cluster string) error {
	return fmt.Errorf("cluster %s is in Pull mode: the federation does not reach it", cluster)
}

// removeAll removes every object of the Work, those of its manifests and those its record names.
func (r *Reconciler) removeAll(ctx context.Context, work *workv1alpha1.Work) error {
	mc, err := r.Members.Client(ctx, work.Spec.ClusterName)
	if err != nil {
		return err
	}
	refs := workrecord.Parse(work.Annotations)
	for i, m := range work.Spec.Workload.Manifests {
		obj, err := decodeManifest(i, m)
		if err != nil {
			continue
		}
		ref := workrecord.RefOf(obj)
		if !slices.ContainsFunc(refs, func(o workrecord.Ref) bool { return workrecord.Same(o, ref, work.Namespace) }) {
			refs = append(refs, ref)
		}
	}
	preserve := ptr.Deref(work.Spec.PreserveResourcesOnDeletion, false)
	for _, ref := range refs {
		if err := r.removeObject(ctx, mc, work, ref, preserve); err != nil {
			return fmt.Errorf("%s: %w", ref, err)
		}
	}
	return nil
}

// removeObject deletes ref from the member, or with preserve releases it (takes fedmesh's marks and field
// ownership off it, releasePatch). Only an object that carries this Work's labels is touched, and none that
// another live Work of the same cluster and namespace still has (a dependency two templates share). A kind the
// member does not serve has no object there: there is nothing to remove, and a Work that waited for it would never
// go. One whose API the member's discovery failed to read is not that (member.DiscoveryFailedError): its objects
// may be there, and the removal is retried.
func (r *Reconciler) removeObject(ctx context.Context, mc *member.Client, work *workv1alpha1.Work, ref workrecord.Ref, preserve bool) error {
	ri, err := resourceForRef(mc, ref, work.Namespace)
	var outside *outOfScopeError
	if meta.IsNoMatchError(err) || errors.As(err, &outside) {
		return nil // nothing there, or nothing the Work may touch
	}
	if err != nil {
		return err
	}
	observed, err := ri.Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !belongsTo(observed, work) {
		return nil
	}
	other, err := r.sharedWithOtherWork(ctx, work, ref)
	if err != nil {
		return err
	}
	if other != "" {
		// Hand it to the Work that keeps it, so its status and its own deletion find it.
		_, err = ri.Patch(ctx, ref.Name, types.MergePatchType, handoverPatch(other), metav1.PatchOptions{})
		return err
	}
	if !preserve {
		err = ri.Delete(ctx, ref.Name, metav1.DeleteOptions{
			Preconditions:     &metav1.Preconditions{UID: ptr.To(observed.GetUID())},
			PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
		})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	}
	patch, err := releasePatch(observed)
	if err != nil {
		return err
	}
	_, err = ri.Patch(ctx, ref.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// handoverPatch marks an object as the Work work's (of the same namespace) in place of another's.
func handoverPatch(work string) []byte {
	var full any // null removes a whole name left by a Work whose name was too long for the label
	if a := names.AppliedAnnotations(work); a != nil {
		full = a[names.WorkNameAnnotation]
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"labels":      map[string]any{names.WorkNameLabel: names.LabelValue(work)},
		"annotations": map[string]any{names.WorkNameAnnotation: full},
	}})
	return patch
}

// releasedMarks are the labels and annotations other than its identity that fedmesh's rendering puts on a member's
// copy: the claim of the template's policy, the template generation it was rendered from, and a paced rollout's
// pod template hash and hold. The template's own labels and annotations are not among them.
var releasedMarks = struct{ labels, annotations []string }{
	labels: []string{names.PropagationPolicyLabel, names.ClusterPropagationPolicyLabel},
	annotations: []string{interpreter.TemplateGenerationAnnotation, names.PodTemplateHashAnnotation,
		names.RolloutHeldAnnotation},
}

// releasePatch removes from observed, a member object, fedmesh's identity labels and annotation, its other marks
// (releasedMarks) and its field ownership, so that a later Work finds it as not fedmesh's (and conflictResolution
// applies again) and nothing on it says a policy claims it. A mark goes only while fedmesh's field manager owns it:
// one the member set, or wrote over, stays. The resourceVersion makes the patch fail rather than overwrite a
// newer list of managers.
func releasePatch(observed metav1.Object) ([]byte, error) {
	var kept []any
	ownedLabels, ownedAnnotations := map[string]bool{}, map[string]bool{}
	for _, f := range observed.GetManagedFields() {
		if f.Manager != names.FieldManager {
			kept = append(kept, f)
			continue
		}
		if err := ownedMetadata(f.FieldsV1, ownedLabels, ownedAnnotations); err != nil {
			return nil, err
		}
	}
	if len(kept) == 0 {
		// An empty list leaves managedFields unchanged; a single empty entry clears them.
		kept = []any{map[string]any{}}
	}
	labels := map[string]any{names.ManagedLabel: nil, names.WorkNamespaceLabel: nil, names.WorkNameLabel: nil}
	for _, k := range releasedMarks.labels {
		if _, ok := observed.GetLabels()[k]; ok && ownedLabels[k] {
			labels[k] = nil
		}
	}
	annotations := map[string]any{names.WorkNameAnnotation: nil}
	for _, k := range releasedMarks.annotations {
		if _, ok := observed.GetAnnotations()[k]; ok && ownedAnnotations[k] {
			annotations[k] = nil
		}
	}
	patch := map[string]any{"metadata": map[string]any{
		"resourceVersion": observed.GetResourceVersion(),
		"managedFields":   kept,
		"labels":          labels,
		"annotations":     annotations,
	}}
	if _, held := annotations[names.RolloutHeldAnnotation]; held {
		// The hold paused the Deployment until its turn, which will not come now: left paused, it would never roll.
		patch["spec"] = map[string]any{"paused": nil}
	}
	return json.Marshal(patch)
}

// ownedMetadata adds to labels and annotations the keys of metadata.labels and metadata.annotations that the
// managed fields set fields owns.
func ownedMetadata(fields *metav1.FieldsV1, labels, annotations map[string]bool) error {
	if fields == nil || len(fields.Raw) == 0 {
		return nil
	}
	var set struct {
		Metadata struct {
			Labels      map[string]json.RawMessage `json:"f:labels"`
			Annotations map[string]json.RawMessage `json:"f:annotations"`
		} `json:"f:metadata"`
	}
	if err := json.Unmarshal(fields.Raw, &set); err != nil {
		return fmt.Errorf("managed fields of %s: %w", names.FieldManager, err)
	}
	for k := range set.Metadata.Labels {
		if key, ok := strings.CutPrefix(k, "f:"); ok {
			labels[key] = true
		}
	}
	for k := range set.Metadata.Annotations {
		if key, ok := strings.CutPrefix(k, "f:"); ok {
			annotations[key] = true
		}
	}
	return nil
}

// sharedWithOtherWork names another Work of the same cluster in work's namespace, not being deleted, that has a
// manifest for ref; "" when there is none.
func (r *Reconciler) sharedWithOtherWork(ctx context.Context, work *workv1alpha1.Work, ref workrecord.Ref) (string, error) {
	var works workv1alpha1.WorkList
	if err := r.Client.List(ctx, &works, client.InNamespace(work.Namespace),
		client.MatchingLabels{names.ClusterLabel: names.LabelValue(work.Spec.ClusterName)}); err != nil {
		return "", err
	}
	for i := range works.Items {
		other := &works.Items[i]
		if other.Name == work.Name || other.Spec.ClusterName != work.Spec.ClusterName || !other.DeletionTimestamp.IsZero() {
			continue
		}
		for j, m := range other.Spec.Workload.Manifests {
			if obj, err := decodeManifest(j, m); err == nil && workrecord.Same(workrecord.RefOf(obj), ref, work.Namespace) {
				return other.Name, nil
			}
		}
	}
	return "", nil
}
