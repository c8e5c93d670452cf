package customization

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
)

// TestFingerprint: a served set's fingerprint changes with what the layer would answer (a script, a kind, a name,
// a customization more or less) and with nothing else (status, generation, metadata, order).
func TestFingerprint(t *testing.T) {
	type set = []configv1alpha1.ResourceInterpreterCustomization
	a, b := ric("a", 1, 0, good), onKind(ric("b", 1, 1, good), "Gadget")
	with := func(c configv1alpha1.ResourceInterpreterCustomization, change func(*configv1alpha1.ResourceInterpreterCustomization)) configv1alpha1.ResourceInterpreterCustomization {
		c.Status.Conditions = append([]metav1.Condition(nil), c.Status.Conditions...)
		change(&c)
		return c
	}
	for _, tc := range []struct {
		name   string
		before set
		after  set
		same   bool
	}{
		{"the same", set{a, b}, set{a, b}, true},
		{"another order", set{a, b}, set{b, a}, true},
		{"a status written", set{a, b}, set{with(a, func(c *configv1alpha1.ResourceInterpreterCustomization) {
			c.Status.ServedGeneration = 1
			c.Status.LastAccepted = &configv1alpha1.AcceptedVersion{Generation: 1, Spec: c.Spec}
			meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: configv1alpha1.CustomizationConditionAccepted,
				Status: metav1.ConditionTrue, Reason: "Accepted", Message: "in other words"})
		}), b}, true},
		{"a new generation of the same scripts", set{a, b}, set{with(a, func(c *configv1alpha1.ResourceInterpreterCustomization) {
			c.Generation, c.ResourceVersion = 2, "7"
		}), b}, true},
		{"empty both", nil, set{}, true},
		{"a script changed", set{a, b}, set{ric("a", 1, 0, good2), b}, false},
		{"a kind changed", set{a, b}, set{onKind(a, "Doohickey"), b}, false},
		{"renamed", set{a, b}, set{ric("c", 1, 0, good), b}, false},
		{"one more", set{a}, set{a, b}, false},
		{"one less", set{a, b}, set{b}, false},
	} {
		before, after := fingerprint(tc.before), fingerprint(tc.after)
		if same := before == after; same != tc.same {
			t.Errorf("%s: same fingerprint %t, want %t", tc.name, same, tc.same)
		}
		if needsBuild(before, after) == tc.same {
			t.Errorf("%s: needsBuild %t", tc.name, !tc.same)
		}
	}
	if !needsBuild("", fingerprint(nil)) {
		t.Error("the first set is not built")
	}
	if !needsBuild("", "") {
		t.Error("a set that cannot be fingerprinted is not built")
	}
}
