package rendering

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/internal/shorten"
)

// maxMessage keeps a condition message within the API's limit.
const maxMessage = 32768

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

// Outcome is what one pass of the binding stage found rendering a binding's Works. It is not to be modified once
// handed over.
type Outcome struct {
	// Generation is the binding's generation the pass rendered.
	Generation int64
	// TemplateMissing says why the template could not be found; empty when it was.
	TemplateMissing string
	// Failed are the target clusters whose Work could not be rendered; their previous Work, if any, stays.
	Failed []Failure
	// MissingDeps are dependencies of the template that do not exist, as "Kind namespace/name".
	MissingDeps []string
	// Works are the generations of the target clusters' Works as the pass left them: a Work seen at an older one
	// has not caught up with the pass yet.
	Works map[string]int64
}

// Failure is a target cluster whose Work could not be rendered.
type Failure struct {
	Cluster string
	Message string
	// InvalidPolicy is true when an override policy is invalid, rather than failing for this template.
	InvalidPolicy bool
	// Leaving is true when the cluster is being deleted: it gets no Work, and its previous one goes.
	Leaving bool
	// NoWork is true when the cluster has no Work to keep (newly targeted).
	NoWork bool
}

func (o Outcome) equal(p Outcome) bool {
	return o.Generation == p.Generation && o.TemplateMissing == p.TemplateMissing && slices.Equal(o.Failed, p.Failed) &&
		slices.Equal(o.MissingDeps, p.MissingDeps) && maps.Equal(o.Works, p.Works)
}

// Problem is what went wrong rendering b's Works, as the reason and message of the FullyApplied condition say it
// (the message without the clusters that have yet to apply); an empty reason when nothing did.
func (o Outcome) Problem(b *workv1alpha1.ResourceBinding) (reason, message string) {
	reason, problems := o.problems(b)
	return reason, shorten.To(strings.Join(problems, "; "), maxMessage)
}

// problems are the outcome's problems, with the reason of the most fundamental.
func (o Outcome) problems(b *workv1alpha1.ResourceBinding) (string, []string) {
	if o.TemplateMissing != "" {
		return ReasonTemplateNotFound, []string{o.TemplateMissing}
	}
	if len(b.Spec.Clusters) == 0 {
		return ReasonNotScheduled, []string{"the binding has no target clusters"}
	}
	var reason string
	var problems []string
	for _, f := range o.Failed {
		switch {
		case f.InvalidPolicy:
			reason = ReasonInvalidOverridePolicy
		case reason == "":
			reason = ReasonRenderFailed
		}
		kept := " (its previous Work is kept)"
		switch {
		case f.Leaving:
			kept = ""
		case f.NoWork:
			kept = " (it has no Work yet)"
		}
		problems = append(problems, fmt.Sprintf("%s: %s%s", f.Cluster, f.Message, kept))
	}
	if len(o.MissingDeps) > 0 {
		if reason == "" {
			reason = ReasonDependencyNotFound
		}
		problems = append(problems, "dependencies not found: "+strings.Join(o.MissingDeps, ", "))
	}
	return reason, problems
}

// FullyApplied is b's FullyApplied condition, given the binding stage's outcome o of rendering b and b's Works:
// True when every target cluster's Work is applied (at its current generation, when the applier says which
// generation it saw, and at least at the one o left it at) and not being deleted, otherwise False naming each
// failing cluster with its message. A Work being deleted is no cluster's current Work, whatever its status says:
// its workload goes with it, and the cluster's next Work is made once it is gone. waiting is true when it is False only because Works have not been made or applied yet with nothing
// failed, or because the scheduler has not looked at the binding yet.
func FullyApplied(b *workv1alpha1.ResourceBinding, o Outcome, works []workv1alpha1.Work) (_ metav1.Condition, waiting bool) {
	cond := metav1.Condition{Type: workv1alpha1.ConditionFullyApplied, Status: metav1.ConditionFalse, ObservedGeneration: b.Generation}
	set := func(reason string, problems []string) metav1.Condition {
		cond.Reason, cond.Message = reason, shorten.To(strings.Join(problems, "; "), maxMessage)
		return cond
	}
	reason, problems := o.problems(b)
	switch reason {
	case ReasonNotScheduled:
		// Before the scheduler's verdict, its Scheduled condition will say more.
		return set(reason, problems), meta.FindStatusCondition(b.Status.Conditions, workv1alpha1.ConditionScheduled) == nil
	case ReasonTemplateNotFound:
		return set(reason, problems), false
	}
	failing := reason != ""
	byCluster := map[string]*workv1alpha1.Work{}
	for i := range works {
		byCluster[works[i].Spec.ClusterName] = &works[i]
	}
	for _, tc := range b.Spec.Clusters {
		if slices.ContainsFunc(o.Failed, func(f Failure) bool { return f.Cluster == tc.Name }) {
			continue
		}
		if msg, ok, pending := workApplied(byCluster[tc.Name], o.Works[tc.Name]); !ok {
			if reason == "" {
				reason = ReasonNotFullyApplied
			}
			failing = failing || !pending
			problems = append(problems, tc.Name+": "+msg)
		}
	}
	if reason != "" {
		return set(reason, problems), !failing
	}
	cond.Status = metav1.ConditionTrue
	return set(ReasonFullyApplied, []string{fmt.Sprintf("applied in %d cluster(s)", len(b.Spec.Clusters))}), false
}

// workApplied reports whether w's Applied condition is True for w's current spec, which is at least at
// generation rendered, or else why not, and whether that is only because the Work (nil: none yet; being deleted:
// its successor not made yet) has not been made or applied yet (pending), not because applying it failed.
// What a cluster's Work has yet to do, as FullyApplied and the aggregated status say it.
const (
	NotAppliedYet        = "not applied yet"
	LatestNotAppliedYet  = "the latest manifests are not applied yet" // the Work changed since its last apply
	PreviousWorkDeleting = "its previous Work is being deleted; a new one follows once it is gone"
)

// AppliedCondition is w's Applied condition, and whether it is about w's current manifests: one the applier gave
// an older generation of w is about manifests w no longer holds (one naming no generation is taken as current).
func AppliedCondition(w *workv1alpha1.Work) (cond *metav1.Condition, current bool) {
	cond = meta.FindStatusCondition(w.Status.Conditions, workv1alpha1.WorkApplied)
	return cond, cond != nil && (cond.ObservedGeneration == 0 || cond.ObservedGeneration >= w.Generation)
}

func workApplied(w *workv1alpha1.Work, rendered int64) (why string, ok, pending bool) {
	if w == nil {
		return "no Work yet", false, true
	}
	if !w.DeletionTimestamp.IsZero() {
		return PreviousWorkDeleting, false, true
	}
	c, current := AppliedCondition(w)
	switch {
	case c == nil:
		return NotAppliedYet, false, true
	case w.Generation < rendered || !current:
		// The first: this copy of the Work is older than the one the binding stage wrote.
		return LatestNotAppliedYet, false, true
	case c.Status != metav1.ConditionTrue:
		msg := c.Message
		if msg == "" {
			msg = c.Reason
		}
		return "not applied: " + msg, false, false
	}
	return "", true, false
}
