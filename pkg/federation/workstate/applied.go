package workstate

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

// Applied reports whether w's Applied condition is True for w's current spec, or else why not, and whether that
// is only because the Work (nil: none yet) has not been made or applied yet (pending), not because applying it
// failed.
func Applied(w *workv1alpha1.Work) (why string, ok, pending bool) {
	if w == nil {
		return "no Work yet", false, true
	}
	c := meta.FindStatusCondition(w.Status.Conditions, workv1alpha1.WorkApplied)
	switch {
	case c == nil:
		return "not applied yet", false, true
	case c.ObservedGeneration != 0 && c.ObservedGeneration < w.Generation:
		return "the latest manifests are not applied yet", false, true
	case c.Status != metav1.ConditionTrue:
		msg := c.Message
		if msg == "" {
			msg = c.Reason
		}
		return "not applied: " + msg, false, false
	}
	return "", true, false
}
