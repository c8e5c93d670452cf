package binding

import (
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/override"
	"github.com/fedmesh/fedmesh/pkg/federation/workstate"
)

// Reasons of the FullyApplied condition, from the most to the least fundamental: the first that holds is given.
const (
	ReasonFullyApplied          = "FullyApplied"
	ReasonNotScheduled          = "NotScheduled"
	ReasonTemplateNotFound      = "TemplateNotFound"
	ReasonInvalidOverridePolicy = "InvalidOverridePolicy"
	ReasonRenderFailed          = "RenderFailed"
	ReasonDependencyNotFound    = "DependencyNotFound"
	ReasonNotFullyApplied       = "NotFullyApplied"
)

// outcome is what a reconcile learned about a binding's Works.
type outcome struct {
	// templateMissing is set when the template could not be found.
	templateMissing string
	// renderErrors are the clusters whose Work could not be rendered; their previous Work, if any, stays.
	renderErrors map[string]error
	// missingDeps are dependencies of the template that do not exist, as "Kind namespace/name".
	missingDeps []string
	// works are the binding's current Works by cluster.
	works map[string]*workv1alpha1.Work
	// unseen are the clusters whose Work exists in the API server but not yet in the cache.
	unseen []string
}

// fullyApplied is the binding's FullyApplied condition: True when every target cluster's Work is applied (at its
// current generation, when the applier says which generation it saw), otherwise False naming each failing cluster
// with its message. waiting is true when it is False only because Works have not been made or applied yet, with
// nothing failed.
func fullyApplied(b *workv1alpha1.ResourceBinding, o outcome) (_ metav1.Condition, waiting bool) {
	cond := metav1.Condition{Type: workv1alpha1.ConditionFullyApplied, Status: metav1.ConditionFalse, ObservedGeneration: b.Generation}
	set := func(reason, msg string) metav1.Condition {
		cond.Reason, cond.Message = reason, truncate(msg)
		return cond
	}
	if o.templateMissing != "" {
		return set(ReasonTemplateNotFound, o.templateMissing), false
	}
	if len(b.Spec.Clusters) == 0 {
		return set(ReasonNotScheduled, "the binding has no target clusters"), false
	}
	var problems []string
	found := map[string]bool{}
	for _, tc := range b.Spec.Clusters {
		if err, failed := o.renderErrors[tc.Name]; failed {
			var pe *override.PolicyError
			found[ReasonRenderFailed] = true
			found[ReasonInvalidOverridePolicy] = found[ReasonInvalidOverridePolicy] || errors.As(err, &pe) && pe.Invalid
			problems = append(problems, fmt.Sprintf("%s: %v (its previous Work is kept)", tc.Name, err))
		}
	}
	if len(o.missingDeps) > 0 {
		found[ReasonDependencyNotFound] = true
		problems = append(problems, "dependencies not found: "+strings.Join(o.missingDeps, ", "))
	}
	failing := len(problems) > 0
	for _, tc := range b.Spec.Clusters {
		if _, failed := o.renderErrors[tc.Name]; failed {
			continue
		}
		if msg, ok, pending := workstate.Applied(o.works[tc.Name]); !ok {
			found[ReasonNotFullyApplied] = true
			failing = failing || !pending
			problems = append(problems, tc.Name+": "+msg)
		}
	}
	for _, r := range []string{ReasonInvalidOverridePolicy, ReasonRenderFailed, ReasonDependencyNotFound, ReasonNotFullyApplied} {
		if found[r] {
			return set(r, strings.Join(problems, "; ")), !failing
		}
	}
	cond.Status = metav1.ConditionTrue
	return set(ReasonFullyApplied, fmt.Sprintf("applied in %d cluster(s)", len(b.Spec.Clusters))), false
}

// truncate keeps a condition message within the API's limit.
func truncate(s string) string {
	const max = 32768
	if len(s) <= max {
		return s
	}
	return s[:max-3] + "..."
}
