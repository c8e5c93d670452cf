package detector

import (
	"context"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
)

// ReasonDependentOverridesMissing: the policy names, in dependentOverrides, overrides that do not exist yet, so it
// does not take effect on the template.
const ReasonDependentOverridesMissing = "DependentOverridesMissing"

// missingOverrides are the overrides p's dependentOverrides names that do not exist: OverridePolicies of its
// namespace for a PropagationPolicy, ClusterOverridePolicies for a ClusterPropagationPolicy.
func (r *Reconciler) missingOverrides(ctx context.Context, p Policy) ([]string, error) {
	var missing []string
	for _, name := range p.Spec.DependentOverrides {
		var obj client.Object = &policyv1alpha1.OverridePolicy{}
		if p.IsCluster() {
			obj = &policyv1alpha1.ClusterOverridePolicy{}
		}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: name}, obj)
		switch {
		case apierrors.IsNotFound(err) || err == nil && obj.GetDeletionTimestamp() != nil:
			missing = append(missing, name)
		case err != nil:
			return nil, err
		}
	}
	return missing, nil
}

// policiesDependingOn are the policies whose dependentOverrides names the override obj (an OverridePolicy names
// the PropagationPolicies of its namespace, a ClusterOverridePolicy the ClusterPropagationPolicies): its creation
// lets them take effect, so their templates are looked at again (reconcilePolicy).
func (r *Reconciler) policiesDependingOn(ctx context.Context, obj client.Object) []reconcile.Request {
	all, err := r.candidatesEverywhere(ctx)
	if err != nil {
		logf.FromContext(ctx).Error(err, "listing the policies depending on an override", "override", obj.GetName())
		return nil
	}
	var out []reconcile.Request
	for _, p := range all {
		if p.Namespace == obj.GetNamespace() && slices.Contains(p.Spec.DependentOverrides, obj.GetName()) {
			out = append(out, reconcile.Request{NamespacedName: p.Key()})
		}
	}
	return out
}
