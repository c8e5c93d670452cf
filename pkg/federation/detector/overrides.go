package detector

import (
	"context"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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

// action is what the detector does with a template.
type action int

const (
	actClaim action = iota // claim it for the policy and write its binding
	actWait                // leave it as it is
)

func (a action) String() string { return [...]string{"claim", "wait"}[a] }

// inEffect is the policy that acts on obj, given chosen, the policy Choose picked among candidates regardless of
// dependentOverrides: chosen itself, once the overrides it depends on exist. Until then it preempts nothing: a
// template held by another policy that still selects it stays with the winner among the policies not waiting, so
// the template's changes still reach its binding. Any other template waits for chosen, as in Karmada: an
// unclaimed one, one chosen holds already, and one whose holder is gone or no longer selects it (HolderLost),
// which keeps its claim and binding, neither handed to a policy ranked below chosen (which would then keep it for
// good, chosen not preempting) nor released. So does one whose holder waits too, with no other policy ready.
// missing names what chosen waits for.
func (r *Reconciler) inEffect(ctx context.Context, obj *unstructured.Unstructured, candidates []Policy, chosen Policy) (Policy, action, []string, error) {
	missing, err := r.missingOverrides(ctx, chosen)
	if err != nil || len(missing) == 0 {
		return chosen, actClaim, nil, err
	}
	holder, claimed := ClaimedBy(obj)
	if !claimed || holder == chosen.claimKey() || HolderLost(obj, candidates) {
		return chosen, actWait, missing, nil
	}
	var ready []Policy
	for _, p := range candidates {
		m, err := r.missingOverrides(ctx, p)
		if err != nil {
			return chosen, actWait, missing, err
		}
		if len(m) == 0 {
			ready = append(ready, p)
		}
	}
	if p, ok := Choose(obj, ready); ok {
		return p, actClaim, missing, nil
	}
	return chosen, actWait, missing, nil
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
