package override

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
)

// Validate checks what the CRD's schema cannot: plaintext and field patches carry a JSON value exactly when their
// operation needs one (add and replace do, remove must not), paths are JSON pointers, selectors parse, labels and
// annotations overriders hold keys and values the API server takes, no overrider asks for the impossible
// (removing an image's repository), and none names a field of the object's identity (identityPaths). It reports
// every problem, each with its place in the spec.
func Validate(spec *policyv1alpha1.OverrideSpec) error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for i, s := range spec.ResourceSelectors {
		if s.LabelSelector != nil {
			if _, err := metav1.LabelSelectorAsSelector(s.LabelSelector); err != nil {
				fail("resourceSelectors[%d].labelSelector: %v", i, err)
			}
		}
	}
	if len(spec.OverrideRules) == 0 {
		fail("overrideRules: at least one rule is required")
	}
	for i := range spec.OverrideRules {
		rule := &spec.OverrideRules[i]
		at := fmt.Sprintf("overrideRules[%d]", i)
		if err := validateAffinity(rule.TargetCluster); err != nil {
			fail("%s.targetCluster: %v", at, err)
		}
		errs = append(errs, validateOverriders(at+".overriders", &rule.Overriders)...)
	}
	return errors.Join(errs...)
}

func validateAffinity(a *policyv1alpha1.ClusterAffinity) error {
	if a == nil {
		return nil
	}
	if a.LabelSelector != nil {
		if _, err := metav1.LabelSelectorAsSelector(a.LabelSelector); err != nil {
			return fmt.Errorf("labelSelector: %w", err)
		}
	}
	if a.FieldSelector != nil {
		for j, e := range a.FieldSelector.MatchExpressions {
			if e.Key != "provider" && e.Key != "region" && e.Key != "zone" {
				return fmt.Errorf("fieldSelector.matchExpressions[%d]: key %q is not provider, region or zone", j, e.Key)
			}
			if e.Operator != corev1.NodeSelectorOpIn && e.Operator != corev1.NodeSelectorOpNotIn {
				return fmt.Errorf("fieldSelector.matchExpressions[%d]: operator %q is not In or NotIn", j, e.Operator)
			}
		}
	}
	return nil
}

func validateOverriders(at string, o *policyv1alpha1.Overriders) []error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for i, p := range o.Plaintext {
		if err := validatePatch(p.Path, p.Operator, p.Value, true); err != nil {
			fail("%s.plaintext[%d]: %v", at, i, err)
		} else if err := notIdentity(p.Path); err != nil {
			fail("%s.plaintext[%d]: %v", at, i, err)
		}
	}
	for i, img := range o.ImageOverrider {
		where := fmt.Sprintf("%s.imageOverrider[%d]", at, i)
		switch {
		case !validOperator(img.Operator):
			fail("%s: unknown operator %q", where, img.Operator)
		case img.Component == policyv1alpha1.Repository && img.Operator == policyv1alpha1.OverriderOpRemove:
			fail("%s: the Repository component cannot be removed", where)
		case img.Operator != policyv1alpha1.OverriderOpRemove && img.Value == "":
			fail("%s: operator %s needs a value", where, img.Operator)
		}
		if img.Predicate != nil {
			if _, err := parsePointer(img.Predicate.Path); err != nil {
				fail("%s.predicate: %v", where, err)
			} else if err := notIdentity(img.Predicate.Path); err != nil {
				fail("%s.predicate: %v", where, err)
			}
		}
	}
	for _, list := range []struct {
		name  string
		items []policyv1alpha1.CommandArgsOverrider
	}{{"commandOverrider", o.CommandOverrider}, {"argsOverrider", o.ArgsOverrider}} {
		for i, c := range list.items {
			if c.Operator != policyv1alpha1.OverriderOpAdd && c.Operator != policyv1alpha1.OverriderOpRemove {
				fail("%s.%s[%d]: operator %q is not add or remove", at, list.name, i, c.Operator)
			}
		}
	}
	// The keys and values are checked as the API server checks an object's labels or annotations, as Karmada's
	// webhook checks them, whatever the operator: a policy must not write an object every member refuses.
	for _, list := range []struct {
		name  string
		items []policyv1alpha1.LabelAnnotationOverrider
		check func(map[string]string, *field.Path) field.ErrorList
	}{
		{"labelsOverrider", o.LabelsOverrider, metav1validation.ValidateLabels},
		{"annotationsOverrider", o.AnnotationsOverrider, apivalidation.ValidateAnnotations},
	} {
		for i, l := range list.items {
			if !validOperator(l.Operator) {
				fail("%s.%s[%d]: unknown operator %q", at, list.name, i, l.Operator)
			}
			errs = append(errs, sorted(list.check(l.Value, field.NewPath(at).Child(list.name).Index(i).Child("value")))...)
		}
	}
	for i, f := range o.FieldOverrider {
		where := fmt.Sprintf("%s.fieldOverrider[%d]", at, i)
		if _, err := parsePointer(f.FieldPath); err != nil {
			fail("%s.fieldPath: %v", where, err)
		} else if err := notIdentity(f.FieldPath); err != nil {
			fail("%s.fieldPath: %v", where, err)
		}
		if (len(f.JSON) > 0) == (len(f.YAML) > 0) {
			fail("%s: set exactly one of json or yaml", where)
		}
		for j, op := range append(append([]policyv1alpha1.PatchOperation(nil), f.JSON...), f.YAML...) {
			// A value given with remove is ignored here, as the API documents.
			if err := validatePatch(op.SubPath, op.Operator, op.Value, false); err != nil {
				fail("%s.%s[%d]: %v", where, formatOf(f), j, err)
			}
		}
	}
	return errs
}

// sorted returns errs in the order of their messages, which a map's keys do not give: a policy's condition must
// not change from one check to the next.
func sorted(errs field.ErrorList) []error {
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = e
	}
	slices.SortFunc(out, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return out
}

// notIdentity refuses a JSON pointer at, under or above a field of the object's identity.
func notIdentity(path string) error {
	tokens, err := parsePointer(path)
	if err != nil {
		return err
	}
	if fields := identityFieldsAt(tokens); len(fields) > 0 {
		return fmt.Errorf("path %s would change %s: %s", path, strings.Join(fields, " and "), identityRule)
	}
	return nil
}

// validatePatch checks one JSON-patch operation; strictRemove refuses a value given with remove.
func validatePatch(path string, op policyv1alpha1.OverriderOperator, value *apiextensionsv1.JSON, strictRemove bool) error {
	if _, err := parsePointer(path); err != nil {
		return err
	}
	hasValue := value != nil && len(value.Raw) > 0
	switch op {
	case policyv1alpha1.OverriderOpAdd, policyv1alpha1.OverriderOpReplace:
		if !hasValue {
			return fmt.Errorf("%s of %s needs a value", op, path)
		}
	case policyv1alpha1.OverriderOpRemove:
		if hasValue && strictRemove {
			return fmt.Errorf("remove of %s must not have a value (got %s)", path, value.Raw)
		}
		return nil
	default:
		return fmt.Errorf("unknown operator %q", op)
	}
	var v any
	if err := utiljson.Unmarshal(value.Raw, &v); err != nil {
		return fmt.Errorf("value of %s is not JSON: %w", path, err)
	}
	return nil
}

func validOperator(op policyv1alpha1.OverriderOperator) bool {
	switch op {
	case policyv1alpha1.OverriderOpAdd, policyv1alpha1.OverriderOpRemove, policyv1alpha1.OverriderOpReplace:
		return true
	}
	return false
}

func formatOf(f policyv1alpha1.FieldOverrider) string {
	if len(f.YAML) > 0 {
		return "yaml"
	}
	return "json"
}
