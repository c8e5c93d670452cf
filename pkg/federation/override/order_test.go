package override

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
)

// marking is a rule that records its policy in the label "last": the last policy applied has the last word.
func marking(name string) policyv1alpha1.RuleWithCluster {
	return rule(policyv1alpha1.Overriders{
		Plaintext: []policyv1alpha1.PlaintextOverrider{{Path: "/metadata/labels/last", Operator: "add", Value: js(`"` + name + `"`)}},
	})
}

func TestPolicyOrder(t *testing.T) {
	ps := Policies{
		Cluster:    []policyv1alpha1.ClusterOverridePolicy{clusterWide("b", marking("cop-b")), clusterWide("a", marking("cop-a"))},
		Namespaced: []policyv1alpha1.OverridePolicy{namespaced("z", marking("op-z")), namespaced("m", marking("op-m"))},
	}
	got, applied, err := Apply(object(t, deployment), member1, ps)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ClusterOverridePolicy/a", "ClusterOverridePolicy/b", "OverridePolicy/m", "OverridePolicy/z"}
	if diff := cmp.Diff(want, applied); diff != "" {
		t.Errorf("applied (-want +got):\n%s", diff)
	}
	if l := got.GetLabels(); l["last"] != "op-z" {
		t.Errorf("last %q, want op-z", l["last"])
	}
}

// Within each kind, the least precise selection applies first and the most precise last, then by name: a policy
// naming the Deployment beats one for every Deployment, whatever their names.
func TestPolicyOrderByPrecision(t *testing.T) {
	selecting := func(p policyv1alpha1.OverridePolicy, sel policyv1alpha1.ResourceSelector) policyv1alpha1.OverridePolicy {
		sel.APIVersion, sel.Kind = "apps/v1", "Deployment"
		p.Spec.ResourceSelectors = []policyv1alpha1.ResourceSelector{sel}
		return p
	}
	ps := Policies{Namespaced: []policyv1alpha1.OverridePolicy{
		selecting(namespaced("a-by-name", marking("a-by-name")), policyv1alpha1.ResourceSelector{Name: "web"}),
		selecting(namespaced("b-by-labels", marking("b-by-labels")), policyv1alpha1.ResourceSelector{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}),
		namespaced("z-every-kind", marking("z-every-kind")),
		selecting(namespaced("y-by-kind", marking("y-by-kind")), policyv1alpha1.ResourceSelector{}),
		selecting(namespaced("c-other", marking("c-other")), policyv1alpha1.ResourceSelector{Name: "db"}),
	}}
	got, applied, err := Apply(object(t, deployment), member1, ps)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"OverridePolicy/y-by-kind", "OverridePolicy/z-every-kind", "OverridePolicy/b-by-labels", "OverridePolicy/a-by-name"}
	if diff := cmp.Diff(want, applied); diff != "" {
		t.Errorf("applied (-want +got):\n%s", diff)
	}
	if l := got.GetLabels(); l["last"] != "a-by-name" {
		t.Errorf("last %q, want a-by-name, the most precise", l["last"])
	}
}

func TestOverriderOrderWithinRule(t *testing.T) {
	// Listed in the struct in no particular order; applied image, command, args, labels, annotations, field,
	// plaintext. Plaintext, last, sees and overwrites what the image overrider did.
	o := policyv1alpha1.Overriders{
		Plaintext: []policyv1alpha1.PlaintextOverrider{
			{Path: "/spec/template/spec/containers/0/image", Operator: "replace", Value: js(`"pinned/nginx:1.0"`)},
			{Path: "/metadata/labels/added", Operator: "remove"},
		},
		LabelsOverrider: []policyv1alpha1.LabelAnnotationOverrider{{Operator: "add", Value: map[string]string{"added": "x"}}},
		ImageOverrider:  []policyv1alpha1.ImageOverrider{img("Registry", "add", ".mirror")},
	}
	got, _, err := Apply(object(t, deployment), member1, Policies{Namespaced: []policyv1alpha1.OverridePolicy{namespaced("p", rule(o))}})
	if err != nil {
		t.Fatal(err)
	}
	containers := containersOf(got.Object)
	if img := containers[0].(map[string]any)["image"]; img != "pinned/nginx:1.0" {
		t.Errorf("image %v: plaintext did not run after the image overrider", img)
	}
	if img := containers[1].(map[string]any)["image"]; img != "reg.example.mirror/team/proxy:v1" {
		t.Errorf("sidecar image %v, want its registry appended to", img)
	}
	if _, ok := got.GetLabels()["added"]; ok {
		t.Errorf("label added survives: plaintext did not run after the labels overrider")
	}
}

func containersOf(o map[string]any) []any {
	spec := o["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	cs, _ := spec["containers"].([]any)
	return cs
}

func TestSelection(t *testing.T) {
	setLabel := func(v string) policyv1alpha1.Overriders {
		return policyv1alpha1.Overriders{LabelsOverrider: []policyv1alpha1.LabelAnnotationOverrider{{Operator: "add", Value: map[string]string{"x": v}}}}
	}
	targeted := func(a *policyv1alpha1.ClusterAffinity) policyv1alpha1.RuleWithCluster {
		return policyv1alpha1.RuleWithCluster{TargetCluster: a, Overriders: setLabel("y")}
	}
	deploy := func(sel ...policyv1alpha1.ResourceSelector) []policyv1alpha1.ResourceSelector { return sel }
	for _, tc := range []struct {
		name      string
		selectors []policyv1alpha1.ResourceSelector
		clusterNS string // when set, the policy is a ClusterOverridePolicy and this is its selectors' namespace
		policyNS  string
		rule      policyv1alpha1.RuleWithCluster
		cluster   *clusterv1alpha1.Cluster
		want      bool
	}{
		{name: "no selectors, no target", rule: targeted(nil), cluster: member1, want: true},
		{name: "policy of another namespace", policyNS: "other", rule: targeted(nil), cluster: member1, want: false},
		{name: "kind mismatch", selectors: deploy(policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "StatefulSet"}), rule: targeted(nil), cluster: member1},
		{name: "apiVersion mismatch", selectors: deploy(policyv1alpha1.ResourceSelector{APIVersion: "apps/v1beta1", Kind: "Deployment"}), rule: targeted(nil), cluster: member1},
		{name: "by name", selectors: deploy(policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}), rule: targeted(nil), cluster: member1, want: true},
		{name: "other name", selectors: deploy(policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", Name: "api"}), rule: targeted(nil), cluster: member1},
		{name: "second selector matches", selectors: deploy(
			policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", Name: "api"},
			policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "front"}}},
		), rule: targeted(nil), cluster: member1, want: true},
		{name: "label selector mismatch", selectors: deploy(policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "back"}}}), rule: targeted(nil), cluster: member1},
		{name: "cluster policy, any namespace", clusterNS: "-", selectors: deploy(policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment"}), rule: targeted(nil), cluster: member1, want: true},
		{name: "cluster policy, other namespace", clusterNS: "other", selectors: deploy(policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "other"}), rule: targeted(nil), cluster: member1},
		{name: "cluster names", rule: targeted(&policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member2"}}), cluster: member1},
		{name: "cluster names match", rule: targeted(&policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member2", "member1"}}), cluster: member1, want: true},
		{name: "excluded", rule: targeted(&policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1"}, ExcludeClusters: []string{"member1"}}), cluster: member1},
		{name: "exclude only", rule: targeted(&policyv1alpha1.ClusterAffinity{ExcludeClusters: []string{"member1"}}), cluster: member2, want: true},
		{name: "cluster label", rule: targeted(&policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}), cluster: member2},
		{name: "cluster label match", rule: targeted(&policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}), cluster: member1, want: true},
		{name: "zone In listing some of several zones", rule: targeted(fields("zone", corev1.NodeSelectorOpIn, "eu-1b")), cluster: member1},
		{name: "zone In listing every one of several zones", rule: targeted(fields("zone", corev1.NodeSelectorOpIn, "eu-1b", "eu-1a", "us-1a")), cluster: member1, want: true},
		{name: "zone NotIn over several zones", rule: targeted(fields("zone", corev1.NodeSelectorOpNotIn, "eu-1b")), cluster: member1},
		{name: "deprecated zone field", rule: targeted(fields("zone", corev1.NodeSelectorOpIn, "us-1a")), cluster: member2, want: true},
		{name: "region NotIn", rule: targeted(fields("region", corev1.NodeSelectorOpNotIn, "eu")), cluster: member2, want: true},
		{name: "provider In mismatch", rule: targeted(fields("provider", corev1.NodeSelectorOpIn, "aws")), cluster: member2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ps Policies
			if tc.clusterNS != "" {
				p := clusterWide("p", tc.rule)
				p.Spec.ResourceSelectors = tc.selectors
				ps.Cluster = append(ps.Cluster, p)
			} else {
				p := namespaced("p", tc.rule)
				p.Spec.ResourceSelectors = tc.selectors
				if tc.policyNS != "" {
					p.Namespace = tc.policyNS
				}
				ps.Namespaced = append(ps.Namespaced, p)
			}
			got, applied, err := Apply(object(t, deployment), tc.cluster, ps)
			if err != nil {
				t.Fatal(err)
			}
			if has := got.GetLabels()["x"] == "y"; has != tc.want || (len(applied) == 1) != tc.want {
				t.Errorf("overridden %v, applied %v; want overridden %v", has, applied, tc.want)
			}
		})
	}
}

func fields(key string, op corev1.NodeSelectorOperator, values ...string) *policyv1alpha1.ClusterAffinity {
	return &policyv1alpha1.ClusterAffinity{FieldSelector: &policyv1alpha1.FieldSelector{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}},
	}}
}

func TestInvalidPolicyIsRefusedWhole(t *testing.T) {
	o := policyv1alpha1.Overriders{
		LabelsOverrider: []policyv1alpha1.LabelAnnotationOverrider{{Operator: "add", Value: map[string]string{"x": "y"}}},
		Plaintext:       []policyv1alpha1.PlaintextOverrider{{Path: "/spec/replicas", Operator: "remove", Value: js(`3`)}},
	}
	// The invalid rule targets member2 only, yet the policy is refused for member1 too: it is wrong as a whole.
	bad := namespaced("bad", rule(policyv1alpha1.Overriders{LabelsOverrider: o.LabelsOverrider}),
		policyv1alpha1.RuleWithCluster{TargetCluster: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member2"}}, Overriders: o})
	_, _, err := Apply(object(t, deployment), member1, Policies{Namespaced: []policyv1alpha1.OverridePolicy{bad}})
	var pe *PolicyError
	if !errors.As(err, &pe) || !pe.Invalid || pe.Policy != "OverridePolicy/bad" {
		t.Fatalf("error %v, want an invalid-policy error for OverridePolicy/bad", err)
	}
	want := "OverridePolicy/bad is invalid: overrideRules[1].overriders.plaintext[0]: remove of /spec/replicas must not have a value (got 3)"
	if err.Error() != want {
		t.Errorf("error\n %s\nwant\n %s", err, want)
	}
	// A policy that does not select the template is not looked at.
	bad.Spec.ResourceSelectors = []policyv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap"}}
	if _, _, err := Apply(object(t, deployment), member1, Policies{Namespaced: []policyv1alpha1.OverridePolicy{bad}}); err != nil {
		t.Errorf("a policy that does not select the template failed it: %v", err)
	}
}

func TestValidate(t *testing.T) {
	spec := func(o policyv1alpha1.Overriders) *policyv1alpha1.OverrideSpec {
		return &policyv1alpha1.OverrideSpec{OverrideRules: []policyv1alpha1.RuleWithCluster{rule(o)}}
	}
	labels := func(op policyv1alpha1.OverriderOperator, value map[string]string) *policyv1alpha1.OverrideSpec {
		return spec(policyv1alpha1.Overriders{LabelsOverrider: []policyv1alpha1.LabelAnnotationOverrider{{Operator: op, Value: value}}})
	}
	for _, tc := range []struct {
		name string
		spec *policyv1alpha1.OverrideSpec
		want []string // substrings of the error; none means valid
	}{
		{name: "valid plaintext", spec: spec(policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{
			{Path: "/a", Operator: "add", Value: js(`{"b":1}`)}, {Path: "/a", Operator: "replace", Value: js(`null`)}, {Path: "/a", Operator: "remove"},
		}})},
		{name: "add without value", spec: spec(policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{{Path: "/a", Operator: "add"}}}),
			want: []string{"overrideRules[0].overriders.plaintext[0]: add of /a needs a value"}},
		{name: "replace without value", spec: spec(policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{{Path: "/a", Operator: "replace", Value: js(``)}}}),
			want: []string{"replace of /a needs a value"}},
		{name: "remove with value", spec: spec(policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{{Path: "/a", Operator: "remove", Value: js(`"x"`)}}}),
			want: []string{`remove of /a must not have a value (got "x")`}},
		{name: "value not JSON", spec: spec(policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{{Path: "/a", Operator: "add", Value: js(`{`)}}}),
			want: []string{"value of /a is not JSON"}},
		{name: "bad path and several problems at once", spec: spec(policyv1alpha1.Overriders{
			Plaintext:      []policyv1alpha1.PlaintextOverrider{{Path: "a", Operator: "add", Value: js(`1`)}},
			ImageOverrider: []policyv1alpha1.ImageOverrider{img("Repository", "remove", ""), img("Tag", "replace", "")},
		}), want: []string{"plaintext[0]: path \"a\" is not a JSON pointer", "imageOverrider[0]: the Repository component cannot be removed", "imageOverrider[1]: operator replace needs a value"}},
		{name: "field overrider with both formats", spec: spec(policyv1alpha1.Overriders{FieldOverrider: []policyv1alpha1.FieldOverrider{{
			FieldPath: "/data/x", JSON: []policyv1alpha1.PatchOperation{{SubPath: "/a", Operator: "remove"}}, YAML: []policyv1alpha1.PatchOperation{{SubPath: "/a", Operator: "remove"}},
		}}}), want: []string{"fieldOverrider[0]: set exactly one of json or yaml"}},
		{name: "field patch add without value", spec: spec(policyv1alpha1.Overriders{FieldOverrider: []policyv1alpha1.FieldOverrider{{
			FieldPath: "/data/x", YAML: []policyv1alpha1.PatchOperation{{SubPath: "/a", Operator: "add"}},
		}}}), want: []string{"fieldOverrider[0].yaml[0]: add of /a needs a value"}},
		{name: "args replace", spec: spec(policyv1alpha1.Overriders{ArgsOverrider: []policyv1alpha1.CommandArgsOverrider{{ContainerName: "c", Operator: "replace"}}}),
			want: []string{`argsOverrider[0]: operator "replace" is not add or remove`}},
		// Labels and annotations the API server refuses are refused here, as Karmada's webhook refuses them: every
		// member would refuse the object.
		{name: "valid labels and annotations", spec: spec(policyv1alpha1.Overriders{
			LabelsOverrider: []policyv1alpha1.LabelAnnotationOverrider{{Operator: "add", Value: map[string]string{"example.com/team": "blue", "tier": ""}}},
			AnnotationsOverrider: []policyv1alpha1.LabelAnnotationOverrider{
				{Operator: "add", Value: map[string]string{"example.com/Note": "blue team: any text", "note": strings.Repeat("x", 300)}},
			},
		})},
		{name: "label value with a space", spec: labels("add", map[string]string{"team": "blue team"}),
			want: []string{`overrideRules[0].overriders.labelsOverrider[0].value: Invalid value: "blue team"`}},
		{name: "label value too long", spec: labels("replace", map[string]string{"team": strings.Repeat("x", 64)}),
			want: []string{"overrideRules[0].overriders.labelsOverrider[0].value: Invalid value", "must be no more than 63 bytes"}},
		{name: "label key with a space, whatever the operator", spec: labels("remove", map[string]string{"bad key": ""}),
			want: []string{`overrideRules[0].overriders.labelsOverrider[0].value: Invalid value: "bad key"`}},
		{name: "annotation key with two slashes", spec: spec(policyv1alpha1.Overriders{AnnotationsOverrider: []policyv1alpha1.LabelAnnotationOverrider{
			{Operator: "add", Value: map[string]string{"ok": "x"}}, {Operator: "add", Value: map[string]string{"a/b/c": "x"}},
		}}), want: []string{`overrideRules[0].overriders.annotationsOverrider[1].value: Invalid value: "a/b/c"`}},
		{name: "bad target field selector", spec: &policyv1alpha1.OverrideSpec{OverrideRules: []policyv1alpha1.RuleWithCluster{
			{TargetCluster: fields("rack", corev1.NodeSelectorOpIn, "r1"), Overriders: policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{{Path: "/a", Operator: "remove"}}}},
		}}, want: []string{`overrideRules[0].targetCluster: fieldSelector.matchExpressions[0]: key "rack"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.spec)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("valid spec refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("invalid spec accepted, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
