package cluster

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
)

// Reasons of the CompleteAPIEnablements condition, Karmada's.
const (
	// ReasonAPIsComplete: the member's discovery answered for every group version.
	ReasonAPIsComplete = "Complete"
	// ReasonAPIsPartial: discovery failed for some group versions (e.g. an aggregated API whose service is down).
	ReasonAPIsPartial = "Partial"
)

// apisCondition is the CompleteAPIEnablements condition for a discovery that failed for the group versions failed
// (none: complete). The message names them, not their errors, so that the condition stays the same from one probe
// to the next while the same groups fail.
func apisCondition(failed []schema.GroupVersion, generation int64) metav1.Condition {
	c := metav1.Condition{
		Type:               clusterv1alpha1.ClusterConditionCompleteAPIEnablements,
		Status:             metav1.ConditionTrue,
		Reason:             ReasonAPIsComplete,
		Message:            "discovery listed every API group",
		ObservedGeneration: generation,
	}
	if len(failed) > 0 {
		names := make([]string, len(failed))
		for i, gv := range failed {
			names[i] = gv.String()
		}
		c.Status, c.Reason = metav1.ConditionFalse, ReasonAPIsPartial
		c.Message = trim(fmt.Sprintf("discovery failed for %s; the resources last reported for them are kept",
			strings.Join(names, ", ")))
	}
	return c
}

// apisEventType is the type of the Event that tells the change of the CompleteAPIEnablements condition from prev
// (nil: none yet) to next, or "" when there is nothing to tell. Partial stops work (no new binding of a kind
// missing from the list goes to the member), so it is a Warning when it starts and when the groups that fail
// change; complete again is Normal. A first probe that finds discovery complete, or the same groups failing
// again, is nothing new.
func apisEventType(prev *metav1.Condition, next metav1.Condition) string {
	switch {
	case next.Status == metav1.ConditionFalse && (prev == nil || prev.Status != metav1.ConditionFalse || prev.Message != next.Message):
		return corev1.EventTypeWarning
	case next.Status == metav1.ConditionTrue && prev != nil && prev.Status == metav1.ConditionFalse:
		return corev1.EventTypeNormal
	default:
		return ""
	}
}

// keepFailed is the API list to report: current, plus the entries previous reported for the group versions whose
// discovery failed now. Their kinds would otherwise vanish from the list, and the scheduler leave out a cluster
// that serves them after all; a group version never reported before stays unknown.
func keepFailed(current, previous []clusterv1alpha1.APIEnablement, failed []schema.GroupVersion) []clusterv1alpha1.APIEnablement {
	out := current
	for _, gv := range failed {
		name := gv.String()
		has := func(e clusterv1alpha1.APIEnablement) bool { return e.GroupVersion == name }
		if slices.ContainsFunc(out, has) {
			continue
		}
		if i := slices.IndexFunc(previous, has); i >= 0 {
			out = append(slices.Clip(out), previous[i])
		}
	}
	if len(out) != len(current) {
		slices.SortFunc(out, func(a, b clusterv1alpha1.APIEnablement) int { return strings.Compare(a.GroupVersion, b.GroupVersion) })
	}
	return out
}

// failedGroupVersions are the group versions of a discovery error (discovery.ErrGroupDiscoveryFailed), sorted.
func failedGroupVersions(groups map[schema.GroupVersion]error) []schema.GroupVersion {
	out := make([]schema.GroupVersion, 0, len(groups))
	for gv := range groups {
		out = append(out, gv)
	}
	slices.SortFunc(out, func(a, b schema.GroupVersion) int { return strings.Compare(a.String(), b.String()) })
	return out
}
