package labelmode

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// The registration is made at run time, so no chart deletes it; and on uninstall the manager goes first. So it is
// owned by a cluster-scoped object the chart does own, the manager's ClusterRole: when that is deleted, the garbage
// collector deletes the registration, which would otherwise send every create of label mode's resources to a
// Service that is gone.

var clusterRoleKind = rbacv1.SchemeGroupVersion.WithKind("ClusterRole")

// owner is the reference to the ClusterRole Owner names; nil, with found false, when it does not exist (a reference
// to a missing owner would have the garbage collector delete the registration at once). An error other than
// NotFound leaves it unknown.
func (r *Reconciler) owner(ctx context.Context) (ref *metav1.OwnerReference, found bool, err error) {
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	var role metav1.PartialObjectMetadata
	role.SetGroupVersionKind(clusterRoleKind)
	err = reader.Get(ctx, client.ObjectKey{Name: r.Owner}, &role)
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	apiVersion, kind := clusterRoleKind.ToAPIVersionAndKind()
	return &metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: role.Name, UID: role.UID}, true, nil
}

// ownerReferences are the registration's owner references as they should be, from those it has. retry says to
// look again later: the owner is missing, or could not be read (the references are then left as they are).
func (r *Reconciler) ownerReferences(ctx context.Context, have []metav1.OwnerReference) (refs []metav1.OwnerReference, retry bool) {
	if r.Owner == "" {
		return have, false
	}
	ref, found, err := r.owner(ctx)
	r.reportOwner(ctx, found, err)
	if err != nil {
		return have, true
	}
	return withOwner(have, ref), !found
}

// reportOwner logs when the owner goes missing or comes back, not at every retry.
func (r *Reconciler) reportOwner(ctx context.Context, found bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	missing := !found
	if missing == r.ownerMissing {
		return
	}
	r.ownerMissing = missing
	logger := log.FromContext(ctx)
	switch {
	case err != nil:
		logger.Info("cannot read the owner of the label webhook's registration; registering it without touching its owners",
			"clusterRole", r.Owner, "error", err.Error(), "retryAfter", RetryUnresolved)
	case missing:
		logger.Info("the owner of the label webhook's registration does not exist; registering it without one, so that "+
			"uninstalling the chart will not delete it", "clusterRole", r.Owner, "retryAfter", RetryUnresolved)
	default:
		logger.Info("the label webhook's registration is owned by its ClusterRole", "clusterRole", r.Owner)
	}
}

// withOwner are refs with owner as their only ClusterRole (none when owner is nil): a reference to another one, of
// an owner renamed or created again, would keep the registration after its owner is gone, or, dangling, have it
// deleted now. References of other kinds are kept.
func withOwner(refs []metav1.OwnerReference, owner *metav1.OwnerReference) []metav1.OwnerReference {
	var out []metav1.OwnerReference
	for _, ref := range refs {
		if gv, err := schema.ParseGroupVersion(ref.APIVersion); err == nil && gv.Group == clusterRoleKind.Group && ref.Kind == clusterRoleKind.Kind {
			continue
		}
		out = append(out, ref)
	}
	if owner != nil {
		out = append(out, *owner)
	}
	return out
}
