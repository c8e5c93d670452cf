package selector

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
)

func TestOf(t *testing.T) {
	web := &unstructured.Unstructured{}
	web.SetAPIVersion("apps/v1")
	web.SetKind("Deployment")
	web.SetNamespace("shop")
	web.SetName("web")
	web.SetLabels(map[string]string{"app": "web"})
	deploy := func(s policyv1alpha1.ResourceSelector) policyv1alpha1.ResourceSelector {
		s.APIVersion, s.Kind = "apps/v1", "Deployment"
		return s
	}
	labelled := func(k, v string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
	}
	for _, tc := range []struct {
		name             string
		sel              policyv1alpha1.ResourceSelector
		defaultNamespace string
		want             Precision
		wantErr          bool
	}{
		{"kind", deploy(policyv1alpha1.ResourceSelector{}), "", KindMatch, false},
		{"other kind", policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "StatefulSet"}, "", NoMatch, false},
		{"other version", policyv1alpha1.ResourceSelector{APIVersion: "apps/v1beta1", Kind: "Deployment"}, "", NoMatch, false},
		{"labels", deploy(policyv1alpha1.ResourceSelector{LabelSelector: labelled("app", "web")}), "", LabelMatch, false},
		{"other labels", deploy(policyv1alpha1.ResourceSelector{LabelSelector: labelled("app", "db")}), "", NoMatch, false},
		{"name", deploy(policyv1alpha1.ResourceSelector{Name: "web"}), "", NameMatch, false},
		{"name decides alone", deploy(policyv1alpha1.ResourceSelector{Name: "web", LabelSelector: labelled("app", "db")}), "", NameMatch, false},
		{"other name", deploy(policyv1alpha1.ResourceSelector{Name: "db"}), "", NoMatch, false},
		{"the policy's namespace", deploy(policyv1alpha1.ResourceSelector{}), "shop", KindMatch, false},
		{"another policy namespace", deploy(policyv1alpha1.ResourceSelector{}), "bank", NoMatch, false},
		{"the selector's namespace", deploy(policyv1alpha1.ResourceSelector{Namespace: "shop"}), "", KindMatch, false},
		{"another selector namespace", deploy(policyv1alpha1.ResourceSelector{Namespace: "bank"}), "", NoMatch, false},
		{"a bad label selector", deploy(policyv1alpha1.ResourceSelector{LabelSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}}}), "", NoMatch, true},
	} {
		got, err := Of(&tc.sel, tc.defaultNamespace, web)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("%s: %v (err %v), want %v (error %v)", tc.name, got, err, tc.want, tc.wantErr)
		}
	}
	best, err := Best([]policyv1alpha1.ResourceSelector{deploy(policyv1alpha1.ResourceSelector{}), deploy(policyv1alpha1.ResourceSelector{Name: "web"})}, "", web)
	if best != NameMatch || err != nil {
		t.Errorf("best of kind and name: %v (%v), want NameMatch", best, err)
	}
}

func TestOfAnyVersion(t *testing.T) {
	hpa := &unstructured.Unstructured{}
	hpa.SetAPIVersion("autoscaling/v2")
	hpa.SetKind("HorizontalPodAutoscaler")
	hpa.SetNamespace("shop")
	hpa.SetName("web")
	for _, tc := range []struct {
		name string
		sel  policyv1alpha1.ResourceSelector
		want Precision
	}{
		{"its version", policyv1alpha1.ResourceSelector{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler"}, KindMatch},
		{"another version", policyv1alpha1.ResourceSelector{APIVersion: "autoscaling/v1", Kind: "HorizontalPodAutoscaler"}, KindMatch},
		{"another version, by name", policyv1alpha1.ResourceSelector{APIVersion: "autoscaling/v1", Kind: "HorizontalPodAutoscaler", Name: "web"}, NameMatch},
		{"another version, another name", policyv1alpha1.ResourceSelector{APIVersion: "autoscaling/v1", Kind: "HorizontalPodAutoscaler", Name: "db"}, NoMatch},
		{"another version, another namespace", policyv1alpha1.ResourceSelector{APIVersion: "autoscaling/v1", Kind: "HorizontalPodAutoscaler", Namespace: "bank"}, NoMatch},
		{"another group", policyv1alpha1.ResourceSelector{APIVersion: "example.com/v2", Kind: "HorizontalPodAutoscaler"}, NoMatch},
		{"the core group", policyv1alpha1.ResourceSelector{APIVersion: "v2", Kind: "HorizontalPodAutoscaler"}, NoMatch},
		{"another kind", policyv1alpha1.ResourceSelector{APIVersion: "autoscaling/v2", Kind: "Scale"}, NoMatch},
		{"no version", policyv1alpha1.ResourceSelector{APIVersion: "", Kind: "HorizontalPodAutoscaler"}, NoMatch},
		{"a malformed apiVersion", policyv1alpha1.ResourceSelector{APIVersion: "autoscaling/v2/x", Kind: "HorizontalPodAutoscaler"}, NoMatch},
	} {
		if got, err := OfAnyVersion(&tc.sel, "", hpa); got != tc.want || err != nil {
			t.Errorf("%s: %v (err %v), want %v", tc.name, got, err, tc.want)
		}
		if got, _ := Of(&tc.sel, "", hpa); tc.sel.APIVersion != "autoscaling/v2" && got != NoMatch {
			t.Errorf("%s: Of matches another version: %v", tc.name, got)
		}
	}
}
