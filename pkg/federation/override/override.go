package override

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/selector"
)

// Policies are the override policies that may apply to a template: the ClusterOverridePolicies, and the
// OverridePolicies of the template's namespace. Policies being deleted should be left out by the caller.
type Policies struct {
	Cluster    []policyv1alpha1.ClusterOverridePolicy
	Namespaced []policyv1alpha1.OverridePolicy
}

// policy is either kind of override policy, as the matcher sees it.
type policy struct {
	// id names the policy in results and errors: "ClusterOverridePolicy/name" or "OverridePolicy/name".
	id string
	// namespace is the OverridePolicy's namespace; empty for a ClusterOverridePolicy.
	namespace string
	spec      *policyv1alpha1.OverrideSpec
	// precision is how precisely the policy selects the object (selector.Best; no selectors select by kind).
	precision selector.Precision
}

// selecting returns the policies that select obj in the order they are applied, as Karmada applies them:
// cluster-wide ones, then namespaced ones; within each, the least precise selection first (by kind, then by
// labels, then by name), so that the most precise policy has the last word, then by name. A policy whose
// selectors cannot be read is an error.
func (ps Policies) selecting(obj *unstructured.Unstructured) ([]policy, error) {
	var cluster, namespaced []policy
	add := func(to *[]policy, p policy) error {
		if p.namespace != "" && p.namespace != obj.GetNamespace() {
			return nil
		}
		p.precision = selector.KindMatch
		if len(p.spec.ResourceSelectors) > 0 {
			prec, err := selector.Best(p.spec.ResourceSelectors, p.namespace, obj)
			if err != nil {
				return &PolicyError{Policy: p.id, Invalid: true, Err: err}
			}
			p.precision = prec
		}
		if p.precision != selector.NoMatch {
			*to = append(*to, p)
		}
		return nil
	}
	for i := range ps.Cluster {
		p := &ps.Cluster[i]
		if err := add(&cluster, policy{id: "ClusterOverridePolicy/" + p.Name, spec: &p.Spec}); err != nil {
			return nil, err
		}
	}
	for i := range ps.Namespaced {
		p := &ps.Namespaced[i]
		if err := add(&namespaced, policy{id: "OverridePolicy/" + p.Name, namespace: p.Namespace, spec: &p.Spec}); err != nil {
			return nil, err
		}
	}
	order := func(a, b policy) int {
		if a.precision != b.precision {
			return int(a.precision) - int(b.precision)
		}
		return strings.Compare(a.id, b.id)
	}
	slices.SortFunc(cluster, order)
	slices.SortFunc(namespaced, order)
	return append(cluster, namespaced...), nil
}

// PolicyError is a policy that cannot be applied, either because it is invalid (Invalid) or because one of its
// overriders failed on the object, e.g. a replace of a field the object does not have.
type PolicyError struct {
	// Policy is "ClusterOverridePolicy/name" or "OverridePolicy/name".
	Policy string
	// Invalid is true when the policy itself is wrong, whatever object it meets.
	Invalid bool
	Err     error
}

func (e *PolicyError) Error() string {
	if e.Invalid {
		return fmt.Sprintf("%s is invalid: %v", e.Policy, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Policy, e.Err)
}

func (e *PolicyError) Unwrap() error { return e.Err }

// Apply returns a copy of obj with every policy of ps that selects obj and cluster applied, in the package's order,
// and the policies applied (as "ClusterOverridePolicy/name" or "OverridePolicy/name"). A policy is applied when its
// resource selectors pick obj and at least one of its rules targets cluster. obj is not changed. The first policy
// that is invalid or fails stops the work with a *PolicyError: a half-overridden object must never be propagated.
func Apply(obj *unstructured.Unstructured, cluster *clusterv1alpha1.Cluster, ps Policies) (*unstructured.Unstructured, []string, error) {
	out := obj.DeepCopy()
	var applied []string
	selecting, err := ps.selecting(obj)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range selecting {
		used, err := applyPolicy(out, cluster, p)
		if err != nil {
			return nil, nil, err
		}
		if used {
			applied = append(applied, p.id)
		}
	}
	return out, applied, nil
}

// applyPolicy applies p's rules that target cluster to obj, which p selects.
func applyPolicy(obj *unstructured.Unstructured, cluster *clusterv1alpha1.Cluster, p policy) (bool, error) {
	invalid := func(err error) (bool, error) { return false, &PolicyError{Policy: p.id, Invalid: true, Err: err} }
	// Checked before any rule runs, so an invalid policy is refused as a whole rather than half applied.
	if err := Validate(p.spec); err != nil {
		return invalid(err)
	}
	used := false
	for i := range p.spec.OverrideRules {
		rule := &p.spec.OverrideRules[i]
		ok, err := selectsCluster(rule.TargetCluster, cluster)
		if err != nil {
			return invalid(fmt.Errorf("overrideRules[%d]: %w", i, err))
		}
		if !ok {
			continue
		}
		before := identityOf(obj)
		if err := applyOverriders(obj, &rule.Overriders); err != nil {
			return false, &PolicyError{Policy: p.id, Err: fmt.Errorf("overrideRules[%d].overriders.%w on %s %s", i, err, obj.GetKind(), obj.GetName())}
		}
		if err := changedIdentity(before, identityOf(obj)); err != nil {
			return invalid(fmt.Errorf("overrideRules[%d] %w (on %s %s)", i, err, before.kind, before.name))
		}
		used = true
	}
	return used, nil
}
