package detector

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/selector"
)

func template(apiVersion, kind, namespace, name string, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	u.SetLabels(labels)
	return u
}

func deployment(namespace, name string, labels map[string]string) *unstructured.Unstructured {
	return template("apps/v1", "Deployment", namespace, name, labels)
}

// pp and cpp build policies; opts adjust the spec.
func pp(namespace, name string, sels []policyv1alpha1.ResourceSelector, opts ...func(*policyv1alpha1.PropagationSpec)) Policy {
	s := &policyv1alpha1.PropagationSpec{ResourceSelectors: sels}
	for _, o := range opts {
		o(s)
	}
	return Policy{Namespace: namespace, Name: name, Spec: s}
}

func cpp(name string, sels []policyv1alpha1.ResourceSelector, opts ...func(*policyv1alpha1.PropagationSpec)) Policy {
	return pp("", name, sels, opts...)
}

func priority(n int32) func(*policyv1alpha1.PropagationSpec) {
	return func(s *policyv1alpha1.PropagationSpec) { s.Priority = ptr.To(n) }
}

func preempt(s *policyv1alpha1.PropagationSpec) { s.Preemption = policyv1alpha1.PreemptAlways }

func byName(name string) []policyv1alpha1.ResourceSelector {
	return []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: name}}
}

func byLabel(k, v string) []policyv1alpha1.ResourceSelector {
	return []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment",
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}}}
}

func byKind() []policyv1alpha1.ResourceSelector {
	return []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment"}}
}

func TestMatch(t *testing.T) {
	web := deployment("a", "web", map[string]string{"app": "web"})
	for _, tc := range []struct {
		name   string
		policy Policy
		obj    *unstructured.Unstructured
		want   selector.Precision
	}{
		{"name", pp("a", "p", byName("web")), web, selector.NameMatch},
		{"other name", pp("a", "p", byName("db")), web, selector.NoMatch},
		{"name wins over a non-matching label selector", pp("a", "p", []policyv1alpha1.ResourceSelector{{
			APIVersion: "apps/v1", Kind: "Deployment", Name: "web",
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}), web, selector.NameMatch},
		{"label", pp("a", "p", byLabel("app", "web")), web, selector.LabelMatch},
		{"other label", pp("a", "p", byLabel("app", "db")), web, selector.NoMatch},
		{"kind", pp("a", "p", byKind()), web, selector.KindMatch},
		{"best of several selectors", pp("a", "p", append(byKind(), byName("web")...)), web, selector.NameMatch},
		{"another version of the kind", pp("a", "p", []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1beta1", Kind: "Deployment"}}), web, selector.KindMatch},
		{"the kind of another group", pp("a", "p", []policyv1alpha1.ResourceSelector{{APIVersion: "extensions/v1beta1", Kind: "Deployment"}}), web, selector.NoMatch},
		{"other kind", pp("a", "p", []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "StatefulSet"}}), web, selector.NoMatch},
		{"propagation policy of another namespace", pp("b", "p", byKind()), web, selector.NoMatch},
		{"propagation policy naming another namespace", pp("a", "p", []policyv1alpha1.ResourceSelector{{
			APIVersion: "apps/v1", Kind: "Deployment", Namespace: "b"}}), web, selector.NoMatch},
		{"cluster policy, any namespace", cpp("c", byKind()), web, selector.KindMatch},
		{"cluster policy, its namespace", cpp("c", []policyv1alpha1.ResourceSelector{{
			APIVersion: "apps/v1", Kind: "Deployment", Namespace: "a"}}), web, selector.KindMatch},
		{"cluster policy, another namespace", cpp("c", []policyv1alpha1.ResourceSelector{{
			APIVersion: "apps/v1", Kind: "Deployment", Namespace: "b"}}), web, selector.NoMatch},
		{"propagation policy, cluster-scoped template", pp("a", "p", []policyv1alpha1.ResourceSelector{{
			APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"}}),
			template("rbac.authorization.k8s.io/v1", "ClusterRole", "", "view", nil), selector.NoMatch},
		{"cluster policy, cluster-scoped template", cpp("c", []policyv1alpha1.ResourceSelector{{
			APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"}}),
			template("rbac.authorization.k8s.io/v1", "ClusterRole", "", "view", nil), selector.KindMatch},
		{"system namespace", cpp("c", byKind()), deployment("kube-system", "dns", nil), selector.NoMatch},
		{"fedmesh system namespace", cpp("c", byKind()), deployment(names.SystemNamespace, "x", nil), selector.NoMatch},
		{"fedmesh kind", cpp("c", []policyv1alpha1.ResourceSelector{{
			APIVersion: "policy.fedmesh.io/v1alpha1", Kind: "PropagationPolicy"}}),
			template("policy.fedmesh.io/v1alpha1", "PropagationPolicy", "a", "p", nil), selector.NoMatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.policy.Match(tc.obj); got != tc.want {
				t.Errorf("Match = %d, want %d", got, tc.want)
			}
		})
	}
}

// longName is a policy name longer than a label value may be.
const longName = "checkout-frontend-canary-propagation-to-every-production-member-cluster"

func TestChoose(t *testing.T) {
	claimedBy := func(label, name string) map[string]string { return map[string]string{"app": "web", label: name} }
	unclaimed := map[string]string{"app": "web"}
	for _, tc := range []struct {
		name       string
		labels     map[string]string
		candidates []Policy
		want       string // policy.String(); "" for none
	}{
		{"none", unclaimed, nil, ""},
		{"none selects it", unclaimed, []Policy{pp("a", "p", byName("db"))}, ""},
		{"propagation policy beats cluster policy of higher priority", unclaimed, []Policy{
			cpp("c", byName("web"), priority(100)), pp("a", "p", byKind())}, "PropagationPolicy a/p"},
		{"higher priority first", unclaimed, []Policy{
			pp("a", "low", byName("web"), priority(1)), pp("a", "high", byKind(), priority(2))}, "PropagationPolicy a/high"},
		{"name beats label", unclaimed, []Policy{pp("a", "l", byLabel("app", "web")), pp("a", "n", byName("web"))}, "PropagationPolicy a/n"},
		{"label beats kind", unclaimed, []Policy{pp("a", "k", byKind()), pp("a", "l", byLabel("app", "web"))}, "PropagationPolicy a/l"},
		{"name order last", unclaimed, []Policy{pp("a", "b", byKind()), pp("a", "a", byKind())}, "PropagationPolicy a/a"},
		{"cluster policies rank among themselves", unclaimed, []Policy{
			cpp("k", byKind(), priority(5)), cpp("n", byName("web"))}, "ClusterPropagationPolicy k"},
		{"claim kept against a better policy without preemption", claimedBy(names.PropagationPolicyLabel, "low"), []Policy{
			pp("a", "low", byKind()), pp("a", "high", byName("web"), priority(10))}, "PropagationPolicy a/low"},
		{"higher priority preempts", claimedBy(names.PropagationPolicyLabel, "low"), []Policy{
			pp("a", "low", byKind()), pp("a", "high", byKind(), priority(10), preempt)}, "PropagationPolicy a/high"},
		{"preemption needs a higher priority, not just a better selector", claimedBy(names.PropagationPolicyLabel, "low"), []Policy{
			pp("a", "low", byKind()), pp("a", "exact", byName("web"), preempt)}, "PropagationPolicy a/low"},
		{"propagation policy preempts a cluster policy whatever the priorities", claimedBy(names.ClusterPropagationPolicyLabel, "c"), []Policy{
			cpp("c", byKind(), priority(100)), pp("a", "p", byKind(), preempt)}, "PropagationPolicy a/p"},
		{"propagation policy without preemption leaves a cluster policy's claim", claimedBy(names.ClusterPropagationPolicyLabel, "c"), []Policy{
			cpp("c", byKind()), pp("a", "p", byName("web"))}, "ClusterPropagationPolicy c"},
		{"cluster policy never preempts a propagation policy", claimedBy(names.PropagationPolicyLabel, "p"), []Policy{
			pp("a", "p", byKind()), cpp("c", byName("web"), priority(100), preempt)}, "PropagationPolicy a/p"},
		{"the best preempting policy wins, not the best overall", claimedBy(names.PropagationPolicyLabel, "low"), []Policy{
			pp("a", "low", byKind(), priority(1)), pp("a", "top", byKind(), priority(9)),
			pp("a", "mid", byKind(), priority(5), preempt)}, "PropagationPolicy a/mid"},
		{"claimer gone: the best takes it", claimedBy(names.PropagationPolicyLabel, "gone"), []Policy{
			pp("a", "k", byKind()), pp("a", "n", byName("web"))}, "PropagationPolicy a/n"},
		{"claimer no longer selects it: the best takes it", claimedBy(names.PropagationPolicyLabel, "p"), []Policy{
			pp("a", "p", byName("db")), cpp("c", byKind())}, "ClusterPropagationPolicy c"},
		{"claimer no longer selects it and nothing else does", claimedBy(names.PropagationPolicyLabel, "p"), []Policy{
			pp("a", "p", byName("db"))}, ""},
		{"a claim by a policy whose name the label shortens is kept", claimedBy(names.PropagationPolicyLabel, names.LabelValue(longName)), []Policy{
			pp("a", longName, byKind()), pp("a", "high", byName("web"), priority(10))}, "PropagationPolicy a/" + longName},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Choose(deployment("a", "web", tc.labels), tc.candidates)
			if !ok {
				if tc.want != "" {
					t.Fatalf("chose none, want %s", tc.want)
				}
				return
			}
			if got.String() != tc.want {
				t.Errorf("chose %s, want %q", got, tc.want)
			}
		})
	}
}

func TestHolderLost(t *testing.T) {
	claimedBy := func(label, name string) map[string]string { return map[string]string{"app": "web", label: name} }
	for _, tc := range []struct {
		name       string
		labels     map[string]string
		candidates []Policy
		want       bool
	}{
		{"unclaimed, nothing selects it", map[string]string{"app": "web"}, nil, false},
		{"unclaimed, a policy selects it", map[string]string{"app": "web"}, []Policy{pp("a", "p", byKind())}, false},
		{"holder selects it", claimedBy(names.PropagationPolicyLabel, "p"), []Policy{pp("a", "p", byKind())}, false},
		{"holder selects it, a rival preempts", claimedBy(names.PropagationPolicyLabel, "p"), []Policy{
			pp("a", "p", byKind()), pp("a", "high", byKind(), priority(10), preempt)}, false},
		{"cluster holder selects it", claimedBy(names.ClusterPropagationPolicyLabel, "c"), []Policy{cpp("c", byKind())}, false},
		{"holder whose name the label shortens", claimedBy(names.PropagationPolicyLabel, names.LabelValue(longName)), []Policy{
			pp("a", longName, byKind())}, false},
		{"holder gone", claimedBy(names.PropagationPolicyLabel, "p"), nil, true},
		{"holder gone, a cluster policy selects it", claimedBy(names.PropagationPolicyLabel, "p"), []Policy{cpp("c", byKind())}, true},
		{"holder no longer selects it", claimedBy(names.PropagationPolicyLabel, "p"), []Policy{pp("a", "p", byName("db"))}, true},
		{"a cluster policy of the holder's name is not the holder", claimedBy(names.PropagationPolicyLabel, "p"), []Policy{cpp("p", byKind())}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := HolderLost(deployment("a", "web", tc.labels), tc.candidates); got != tc.want {
				t.Errorf("HolderLost = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestChooseInAnyVersion: one object read in two versions of its kind is one template; policies selecting it
// through either version win or lose it alike, whichever version it is read in. (Chosen per version, a policy
// naming autoscaling/v2 claimed it from the v2 view while the v1 view, selected by no policy, released it.)
func TestChooseInAnyVersion(t *testing.T) {
	hpa := func(name string) policyv1alpha1.ResourceSelector {
		return policyv1alpha1.ResourceSelector{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler", Name: name}
	}
	legacy := func(name string) policyv1alpha1.ResourceSelector {
		return policyv1alpha1.ResourceSelector{APIVersion: "autoscaling/v1", Kind: "HorizontalPodAutoscaler", Name: name}
	}
	for _, tc := range []struct {
		name       string
		labels     map[string]string
		candidates []Policy
		want       string // policy.String(); "" for none
	}{
		{"selected through one version, another version watched for another policy", nil, []Policy{
			pp("a", "v2", []policyv1alpha1.ResourceSelector{hpa("web")}),
			cpp("legacy", []policyv1alpha1.ResourceSelector{legacy("other")})}, "PropagationPolicy a/v2"},
		{"selected through both versions: one ranking", nil, []Policy{
			pp("a", "v2", []policyv1alpha1.ResourceSelector{hpa("")}),
			pp("a", "v1", []policyv1alpha1.ResourceSelector{legacy("web")})}, "PropagationPolicy a/v1"},
		{"claimed through one version, kept in the other", map[string]string{names.PropagationPolicyLabel: "v2"}, []Policy{
			pp("a", "v2", []policyv1alpha1.ResourceSelector{hpa("")}),
			pp("a", "v1", []policyv1alpha1.ResourceSelector{legacy("web")})}, "PropagationPolicy a/v2"},
		{"selected in neither", nil, []Policy{
			pp("a", "v2", []policyv1alpha1.ResourceSelector{hpa("db")})}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, apiVersion := range []string{"autoscaling/v1", "autoscaling/v2"} {
				chosen := ""
				if got, ok := Choose(template(apiVersion, "HorizontalPodAutoscaler", "a", "web", tc.labels), tc.candidates); ok {
					chosen = got.String()
				}
				if chosen != tc.want {
					t.Errorf("read as %s: chose %q, want %q", apiVersion, chosen, tc.want)
				}
			}
		})
	}
}

// TestPropagatedVersion: a template is propagated in the version the selector that selects it best names, not the
// version it was read in.
func TestPropagatedVersion(t *testing.T) {
	sel := func(apiVersion, name string) policyv1alpha1.ResourceSelector {
		return policyv1alpha1.ResourceSelector{APIVersion: apiVersion, Kind: "HorizontalPodAutoscaler", Name: name}
	}
	web := template("autoscaling/v2", "HorizontalPodAutoscaler", "a", "web", nil)
	for _, tc := range []struct {
		name      string
		selectors []policyv1alpha1.ResourceSelector
		want      string
	}{
		{"the version read", []policyv1alpha1.ResourceSelector{sel("autoscaling/v2", "")}, "autoscaling/v2"},
		{"another version", []policyv1alpha1.ResourceSelector{sel("autoscaling/v1", "")}, "autoscaling/v1"},
		{"the more precise selector's", []policyv1alpha1.ResourceSelector{sel("autoscaling/v2", ""), sel("autoscaling/v1", "web")}, "autoscaling/v1"},
		{"the first of equally precise ones", []policyv1alpha1.ResourceSelector{sel("autoscaling/v1", ""), sel("autoscaling/v2", "")}, "autoscaling/v1"},
		{"not a selector that misses it", []policyv1alpha1.ResourceSelector{sel("autoscaling/v1", "db"), sel("autoscaling/v2", "")}, "autoscaling/v2"},
		{"not selected: the version read", []policyv1alpha1.ResourceSelector{sel("autoscaling/v1", "db")}, "autoscaling/v2"},
	} {
		if got := pp("a", "p", tc.selectors).PropagatedVersion(web); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestClaimedBy(t *testing.T) {
	obj := deployment("a", "web", map[string]string{names.PropagationPolicyLabel: "p"})
	if got, ok := ClaimedBy(obj); !ok || got.Namespace != "a" || got.Name != "p" {
		t.Errorf("ClaimedBy = %v %v, want a/p", got, ok)
	}
	obj = deployment("a", "web", map[string]string{names.ClusterPropagationPolicyLabel: "c"})
	if got, ok := ClaimedBy(obj); !ok || got.Namespace != "" || got.Name != "c" {
		t.Errorf("ClaimedBy = %v %v, want c", got, ok)
	}
	if _, ok := ClaimedBy(deployment("a", "web", nil)); ok {
		t.Error("an unlabelled template is claimed")
	}
}

func TestIgnored(t *testing.T) {
	for _, tc := range []struct {
		gvk             schema.GroupVersionKind
		namespace, name string
		want            bool
	}{
		{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, "a", "web", false},
		{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, "kube-public", "web", true},
		{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, "kube-node-lease", "web", true},
		{schema.GroupVersionKind{Group: "work.fedmesh.io", Version: "v1alpha1", Kind: "Work"}, "a", "w", true},
		{schema.GroupVersionKind{Group: "notfedmesh.io", Version: "v1", Kind: "X"}, "a", "x", false},
		{schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, "", "apps", false},
		{schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, "", "fedmesh-system", true},
		{schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, "", "kube-system", true},
		{schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Namespace"}, "", "kube-system", false},
		{schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "a", "kube-root-ca.crt", true},
		{schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "a", "openshift-service-ca.crt", true},
		{schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "a", "settings", false},
		{schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, "a", "kube-root-ca.crt", false},
		{schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "ConfigMap"}, "a", "kube-root-ca.crt", false},
		{schema.GroupVersionKind{Version: "v1", Kind: "ServiceAccount"}, "a", "default", false},
	} {
		if got := Ignored(tc.gvk, tc.namespace, tc.name); got != tc.want {
			t.Errorf("Ignored(%s, %q, %q) = %v, want %v", tc.gvk, tc.namespace, tc.name, got, tc.want)
		}
	}
}
