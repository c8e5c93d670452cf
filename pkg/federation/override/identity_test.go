package override

import (
	"errors"
	"strings"
	"testing"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
)

func TestIdentityPathsRefused(t *testing.T) {
	plaintext := func(path string) policyv1alpha1.Overriders {
		return policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{{Path: path, Operator: "replace", Value: js(`"x"`)}}}
	}
	for _, tc := range []struct {
		name string
		o    policyv1alpha1.Overriders
		want string // part of the error; "" means valid
	}{
		{"apiVersion", plaintext("/apiVersion"), "plaintext[0]: path /apiVersion would change /apiVersion"},
		{"kind", plaintext("/kind"), "path /kind would change /kind"},
		{"name", plaintext("/metadata/name"), "would change /metadata/name"},
		{"namespace", plaintext("/metadata/namespace"), "would change /metadata/namespace"},
		{"metadata replaced whole", plaintext("/metadata"), "path /metadata would change /metadata/name and /metadata/namespace"},
		{"a field under the namespace", plaintext("/metadata/namespace/x"), "would change /metadata/namespace"},
		{"another case", plaintext("/Metadata/NameSpace"), "would change /metadata/namespace"},
		{"removed", policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{{Path: "/metadata/name", Operator: "remove"}}}, "would change /metadata/name"},
		{"field overrider", policyv1alpha1.Overriders{FieldOverrider: []policyv1alpha1.FieldOverrider{{FieldPath: "/metadata/namespace",
			YAML: []policyv1alpha1.PatchOperation{{SubPath: "/a", Operator: "remove"}}}}}, "fieldOverrider[0].fieldPath: path /metadata/namespace would change"},
		{"image predicate", policyv1alpha1.Overriders{ImageOverrider: []policyv1alpha1.ImageOverrider{{Component: policyv1alpha1.Tag, Operator: "replace", Value: "v2",
			Predicate: &policyv1alpha1.ImagePredicate{Path: "/kind"}}}}, "imageOverrider[0].predicate: path /kind would change /kind"},
		{"labels", plaintext("/metadata/labels/app"), ""},
		{"metadata annotations", plaintext("/metadata/annotations"), ""},
		{"a spec field called kind", plaintext("/spec/kind"), ""},
		{"a key with a slash, escaped", plaintext("/metadata~1namespace"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(&policyv1alpha1.OverrideSpec{OverrideRules: []policyv1alpha1.RuleWithCluster{rule(tc.o)}})
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one with %q", err, tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), identityRule):
				t.Errorf("error %v does not say the rule", err)
			}
		})
	}
}

// The binding stage applies policies that were never admitted (the webhook down, or written before it): a policy
// that moves the object is refused there too, naming the policy and the path, whichever kind of policy it is.
func TestApplyRefusesMovingTheObject(t *testing.T) {
	move := rule(policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{{Path: "/metadata/namespace", Operator: "replace", Value: js(`"victim"`)}}})
	retype := rule(policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{
		{Path: "/apiVersion", Operator: "replace", Value: js(`"rbac.authorization.k8s.io/v1"`)},
		{Path: "/kind", Operator: "replace", Value: js(`"ClusterRole"`)}}})
	for _, tc := range []struct {
		name   string
		ps     Policies
		policy string
		path   string
	}{
		{"namespaced policy moving the namespace", Policies{Namespaced: []policyv1alpha1.OverridePolicy{namespaced("move", move)}}, "OverridePolicy/move", "/metadata/namespace"},
		{"namespaced policy changing the kind", Policies{Namespaced: []policyv1alpha1.OverridePolicy{namespaced("grant", retype)}}, "OverridePolicy/grant", "/apiVersion"},
		{"cluster-wide policy moving the namespace", Policies{Cluster: []policyv1alpha1.ClusterOverridePolicy{clusterWide("move", move)}}, "ClusterOverridePolicy/move", "/metadata/namespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := Apply(object(t, configMap), member1, tc.ps)
			var pe *PolicyError
			if !errors.As(err, &pe) || !pe.Invalid || pe.Policy != tc.policy || !strings.Contains(err.Error(), tc.path) {
				t.Fatalf("Apply = %v, %v; want %s refused as invalid, naming %s", out, err, tc.policy, tc.path)
			}
		})
	}
}

// Whatever overrider changed it, an object whose identity changed is refused: the check on the result backs the
// check on the paths.
func TestChangedIdentity(t *testing.T) {
	base := identity{apiVersion: "apps/v1", kind: "Deployment", name: "web", namespace: "demo"}
	for _, tc := range []struct {
		name  string
		after func(identity) identity
		want  string // the path named; "" means unchanged
	}{
		{"unchanged", func(i identity) identity { return i }, ""},
		{"group", func(i identity) identity { i.apiVersion = "extensions/v1beta1"; return i }, "/apiVersion"},
		{"version only", func(i identity) identity { i.apiVersion = "apps/v1beta2"; return i }, "/apiVersion"},
		{"kind", func(i identity) identity { i.kind = "StatefulSet"; return i }, "/kind"},
		{"name", func(i identity) identity { i.name = "other"; return i }, "/metadata/name"},
		{"namespace", func(i identity) identity { i.namespace = "victim"; return i }, "/metadata/namespace"},
		{"namespace removed", func(i identity) identity { i.namespace = ""; return i }, "/metadata/namespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := changedIdentity(base, tc.after(base))
			if tc.want == "" {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "changes "+tc.want+" from") {
				t.Errorf("error %v, want one naming %s", err, tc.want)
			}
		})
	}
}
