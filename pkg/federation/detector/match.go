package detector

import (
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/selector"
)

// Policy is a PropagationPolicy or a ClusterPropagationPolicy as the matcher sees it.
type Policy struct {
	// Namespace of a PropagationPolicy; empty for a ClusterPropagationPolicy.
	Namespace string
	// Name of the policy.
	Name string
	// Spec of the policy.
	Spec *policyv1alpha1.PropagationSpec
}

// FromPropagationPolicy is the matcher's view of p.
func FromPropagationPolicy(p *policyv1alpha1.PropagationPolicy) Policy {
	return Policy{Namespace: p.Namespace, Name: p.Name, Spec: &p.Spec}
}

// FromClusterPropagationPolicy is the matcher's view of p.
func FromClusterPropagationPolicy(p *policyv1alpha1.ClusterPropagationPolicy) Policy {
	return Policy{Name: p.Name, Spec: &p.Spec}
}

// IsCluster reports whether p is a ClusterPropagationPolicy.
func (p Policy) IsCluster() bool { return p.Namespace == "" }

// Key identifies p; the namespace is empty for a ClusterPropagationPolicy.
func (p Policy) Key() types.NamespacedName {
	return types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
}

// ClaimLabel is the label that names p on the templates it claims, with ClaimValue.
func (p Policy) ClaimLabel() string {
	if p.IsCluster() {
		return names.ClusterPropagationPolicyLabel
	}
	return names.PropagationPolicyLabel
}

// ClaimValue is what ClaimLabel holds: p's name, shortened with a hash when longer than a label value may be.
func (p Policy) ClaimValue() string { return names.LabelValue(p.Name) }

// claimKey is p's Key as ClaimedBy reads it from a claim label.
func (p Policy) claimKey() types.NamespacedName {
	return types.NamespacedName{Namespace: p.Namespace, Name: p.ClaimValue()}
}

// String names p with its kind, for events and logs.
func (p Policy) String() string {
	if p.IsCluster() {
		return "ClusterPropagationPolicy " + p.Name
	}
	return "PropagationPolicy " + p.Namespace + "/" + p.Name
}

func (p Policy) priority() int32 {
	if p.Spec.Priority == nil {
		return 0
	}
	return *p.Spec.Priority
}

// Match is the precision of p's best selector for obj; NoMatch when none selects it (a selector that does not
// parse selects nothing). A selector of obj's group and kind selects it in whatever version obj is read
// (selector.OfAnyVersion): every policy then ranks the same for one object, however the detector reads it. A
// PropagationPolicy only selects templates of its own namespace, and no policy selects fedmesh's own kinds or
// system namespaces.
func (p Policy) Match(obj *unstructured.Unstructured) selector.Precision {
	prec, _ := p.best(obj)
	return prec
}

// PropagatedVersion is the apiVersion in which p propagates obj, a template p selects: the one its best selector
// for obj names (the first of equally precise ones). The binding names the template in that version and its Works
// carry it, so a policy naming the version Karmada would watch propagates as in Karmada, and the override
// policies naming that version apply; obj's own when p does not select obj.
func (p Policy) PropagatedVersion(obj *unstructured.Unstructured) string {
	if _, sel := p.best(obj); sel != nil {
		return sel.APIVersion
	}
	return obj.GetAPIVersion()
}

// best is p's best selector for obj and its precision; nil and NoMatch when none selects obj.
func (p Policy) best(obj *unstructured.Unstructured) (selector.Precision, *policyv1alpha1.ResourceSelector) {
	if Ignored(obj.GroupVersionKind(), obj.GetNamespace(), obj.GetName()) {
		return selector.NoMatch, nil
	}
	if !p.IsCluster() && obj.GetNamespace() != p.Namespace {
		return selector.NoMatch, nil
	}
	best, sel := selector.NoMatch, (*policyv1alpha1.ResourceSelector)(nil)
	for i := range p.Spec.ResourceSelectors {
		if prec, err := selector.OfAnyVersion(&p.Spec.ResourceSelectors[i], p.Namespace, obj); err == nil && prec > best {
			best, sel = prec, &p.Spec.ResourceSelectors[i]
		}
	}
	return best, sel
}

// ignoredNamespaces hold the cluster's and fedmesh's own machinery; nothing in them is ever propagated.
var ignoredNamespaces = map[string]bool{
	metav1.NamespaceSystem: true,
	metav1.NamespacePublic: true,
	"kube-node-lease":      true,
	names.SystemNamespace:  true,
}

// Ignored reports whether the template of kind gvk called namespace/name is out of every policy's reach: fedmesh's
// own kinds (*.fedmesh.io), what is in the system namespaces, and those namespaces themselves (propagated, a
// member's fedmesh-system, which holds the credentials fedmesh reaches it with, would be taken over and could be
// deleted with its template), and what each cluster makes for itself in every namespace (names.SelfMade: the
// host's kube-root-ca.crt would replace a member's CA).
func Ignored(gvk schema.GroupVersionKind, namespace, name string) bool {
	if gvk.Group == "" && gvk.Kind == "Namespace" && ignoredNamespaces[name] {
		return true
	}
	if namespace != "" && names.SelfMade(gvk.GroupKind(), name) {
		return true
	}
	return IgnoredGroup(gvk.Group) || ignoredNamespaces[namespace]
}

// IgnoredGroup reports whether group is one of fedmesh's own API groups.
func IgnoredGroup(group string) bool {
	return group == "fedmesh.io" || strings.HasSuffix(group, ".fedmesh.io")
}

// ClaimedBy is the policy obj's claim label names, if any, its name as the label holds it (Policy.ClaimValue);
// the namespace is empty for a ClusterPropagationPolicy.
func ClaimedBy(obj *unstructured.Unstructured) (types.NamespacedName, bool) {
	l := obj.GetLabels()
	if n := l[names.PropagationPolicyLabel]; n != "" && obj.GetNamespace() != "" {
		return types.NamespacedName{Namespace: obj.GetNamespace(), Name: n}, true
	}
	if n := l[names.ClusterPropagationPolicyLabel]; n != "" {
		return types.NamespacedName{Name: n}, true
	}
	return types.NamespacedName{}, false
}

// Choose picks the policy that claims obj among candidates, or false when none selects it.
//
// Policies are ranked: a PropagationPolicy before any ClusterPropagationPolicy, then higher priority, then the
// more precise selector, then the name that sorts first. The top one claims an unclaimed template. A template
// already claimed by a policy that still selects it stays with that policy, unless a policy ranked above it may
// preempt it (see CanPreempt): a claim is not taken away behind the owner's back just because a rival appeared.
func Choose(obj *unstructured.Unstructured, candidates []Policy) (Policy, bool) {
	type match struct {
		policy    Policy
		precision selector.Precision
	}
	var matches []match
	for _, p := range candidates {
		if prec := p.Match(obj); prec != selector.NoMatch {
			matches = append(matches, match{p, prec})
		}
	}
	if len(matches) == 0 {
		return Policy{}, false
	}
	sort.Slice(matches, func(i, j int) bool {
		a, b := matches[i], matches[j]
		if a.policy.IsCluster() != b.policy.IsCluster() {
			return !a.policy.IsCluster()
		}
		if a.policy.priority() != b.policy.priority() {
			return a.policy.priority() > b.policy.priority()
		}
		if a.precision != b.precision {
			return a.precision > b.precision
		}
		return a.policy.Name < b.policy.Name
	})
	claim, claimed := ClaimedBy(obj)
	var current *Policy
	for i := range matches {
		if claimed && matches[i].policy.claimKey() == claim {
			current = &matches[i].policy
		}
	}
	if current == nil {
		return matches[0].policy, true
	}
	for _, m := range matches {
		if m.policy.Key() == current.Key() || CanPreempt(m.policy, *current) {
			return m.policy, true
		}
	}
	return *current, true // unreachable: current is among the matches
}

// CanPreempt reports whether p may take a template claimed by holder: p must ask for preemption, and be a
// PropagationPolicy taking from a ClusterPropagationPolicy, or of the same kind as holder with a higher priority.
// A ClusterPropagationPolicy never takes a template from a PropagationPolicy.
func CanPreempt(p, holder Policy) bool {
	if p.Spec.Preemption != policyv1alpha1.PreemptAlways || p.Key() == holder.Key() {
		return false
	}
	if p.IsCluster() != holder.IsCluster() {
		return !p.IsCluster()
	}
	return p.priority() > holder.priority()
}

// HolderLost reports whether obj is claimed by a policy that is not among the candidates selecting it (gone, or
// no longer selecting obj): Choose then releases obj or hands it to another policy, which no policy may take back
// without preemption.
func HolderLost(obj *unstructured.Unstructured, candidates []Policy) bool {
	holder, claimed := ClaimedBy(obj)
	if !claimed {
		return false
	}
	for _, p := range candidates {
		if p.claimKey() == holder && p.Match(obj) != selector.NoMatch {
			return false
		}
	}
	return true
}
