package customization

import (
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/acceptance"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/declarative"
)

// Verdict is what Select decided about one customization: whether its current spec is accepted (Err, when refused,
// is the Lua error with its line, or the conflict), which generation serves, and which version to keep as its last
// accepted one, the spec when it is accepted. It is what the customization's status says; its Reason is one of
// configv1alpha1.CustomizationReason*.
type Verdict = acceptance.Verdict[*configv1alpha1.AcceptedVersion]

// TakenBefore is the order Select takes customizations in: oldest first; of two created in the same second
// (timestamps have whole seconds), the one already serving; then by name.
func TakenBefore(a, b *configv1alpha1.ResourceInterpreterCustomization) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	if aServes, bServes := a.Status.ServedGeneration != 0, b.Status.ServedGeneration != 0; aServes != bServes {
		return aServes
	}
	return a.Name < b.Name
}

// Select chooses the versions to serve from current, the customizations in the host with their statuses. A
// customization whose spec loads and defines no operation an older one defines is accepted and serves; otherwise
// it is refused, and the last accepted version its status keeps serves instead if it loads and conflicts with
// nothing. Since that version is in the status, every federator (each shard, and one just restarted) decides the
// same. A status never written (an installation from before statuses) keeps nothing: the spec, if accepted, is the
// first version kept. Customizations are taken oldest first, so when two define the same operation for the same
// kind the older one keeps it (the one already serving, when both were created in the same second). Select does no
// I/O; it compiles the scripts. The served versions come in the order taken, each with the generation it had.
func Select(current []configv1alpha1.ResourceInterpreterCustomization) (serve []configv1alpha1.ResourceInterpreterCustomization, verdicts []Verdict) {
	ordered := append([]configv1alpha1.ResourceInterpreterCustomization(nil), current...)
	sort.SliceStable(ordered, func(i, j int) bool { return TakenBefore(&ordered[i], &ordered[j]) })
	for i := range ordered {
		c := &ordered[i]
		v := Verdict{Name: c.Name, Generation: c.Generation, Reason: configv1alpha1.CustomizationReasonAccepted,
			LastAccepted: c.Status.LastAccepted}
		if v.Err = declarative.Validate(c); v.Err != nil {
			v.Reason = configv1alpha1.CustomizationReasonInvalidScript
		} else if err := declarative.Conflicts(c, serve); err != nil {
			v.Reason, v.Err = configv1alpha1.CustomizationReasonConflict, fmt.Errorf("conflicts with an older customization: %w", err)
		}
		if v.Accepted() {
			serve = append(serve, *c)
			v.ServedGeneration = c.Generation
			v.LastAccepted = &configv1alpha1.AcceptedVersion{Generation: c.Generation, Spec: *c.Spec.DeepCopy()}
			v.Message = fmt.Sprintf("serving %d scripts for %s, %s", len(declarative.Operations(c)),
				c.Spec.Target.APIVersion, c.Spec.Target.Kind)
			verdicts = append(verdicts, v)
			continue
		}
		prev, instead := fallback(c, serve)
		if prev != nil {
			serve = append(serve, *prev)
			v.ServedGeneration = prev.Generation
		}
		v.Message = v.Err.Error() + "; " + instead
		verdicts = append(verdicts, v)
	}
	return serve, verdicts
}

// fallback is the last accepted version of c, refused, when it can serve beside serve, and says so; otherwise nil
// and why not.
func fallback(c *configv1alpha1.ResourceInterpreterCustomization, serve []configv1alpha1.ResourceInterpreterCustomization) (*configv1alpha1.ResourceInterpreterCustomization, string) {
	last := c.Status.LastAccepted
	// The last accepted version may be the spec itself, displaced since by an older customization's edit.
	if last == nil || last.Generation == c.Generation {
		return nil, "no earlier accepted version is kept, so none serves"
	}
	prev := &configv1alpha1.ResourceInterpreterCustomization{ObjectMeta: metav1.ObjectMeta{Name: c.Name, Generation: last.Generation},
		Spec: last.Spec}
	if err := declarative.Validate(prev); err != nil {
		// Written by a federator that loaded it: one that cannot (another version of fedmesh) ignores it.
		return nil, fmt.Sprintf("its last accepted version (generation %d) does not load here either, so it is ignored: %v", last.Generation, err)
	}
	if err := declarative.Conflicts(prev, serve); err != nil {
		return nil, fmt.Sprintf("its last accepted version (generation %d) conflicts with an older customization too: %v", last.Generation, err)
	}
	return prev, fmt.Sprintf("its last accepted version (generation %d) keeps serving", last.Generation)
}
