package webhook

import (
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
)

// Matches reports whether any of rules selects op on gvk.
func Matches(rules []configv1alpha1.RuleWithOperations, gvk schema.GroupVersionKind, op interpreter.Operation) bool {
	for _, r := range rules {
		if matchesOne(r.Operations, op) && matchesOne(r.APIGroups, gvk.Group) &&
			matchesOne(r.APIVersions, gvk.Version) && matchesOne(r.Kinds, gvk.Kind) {
			return true
		}
	}
	return false
}

func matchesOne[T ~string](values []T, v T) bool {
	return slices.Contains(values, "*") || slices.Contains(values, v)
}
