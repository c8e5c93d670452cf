package rollout

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"strconv"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
)

var deploymentGK = schema.GroupKind{Group: "apps", Kind: "Deployment"}

// Paced reports whether template's rollout can be paced across clusters: a Deployment that rolls (strategy
// RollingUpdate, the default) and that its owner has not paused (then every cluster stays paused, as the
// Deployment would in one cluster).
func Paced(template *unstructured.Unstructured) bool {
	if template.GroupVersionKind().GroupKind() != deploymentGK {
		return false
	}
	if t, _, _ := unstructured.NestedString(template.Object, "spec", "strategy", "type"); t != "" && t != "RollingUpdate" {
		return false
	}
	paused, _, _ := unstructured.NestedBool(template.Object, "spec", "paused")
	return !paused
}

// memberStatus is what the native interpreter reflects of a member's Deployment (see native.reflectCounts).
type memberStatus struct {
	Replicas            int32 `json:"replicas"`
	UpdatedReplicas     int32 `json:"updatedReplicas"`
	AvailableReplicas   int32 `json:"availableReplicas"`
	UnavailableReplicas int32 `json:"unavailableReplicas"`
	ObservedGeneration  int64 `json:"observedGeneration"`
	Generation          int64 `json:"generation"`
	// PodTemplateHash is the one Amend stamped on the member's object.
	PodTemplateHash *string `json:"podTemplateHash"`
}

// settled reports whether the member's Deployment controller has seen its spec and every wanted pod exists, runs
// the pod template it holds and is available (unavailableReplicas counts the wanted pods that do not exist yet).
func (s *memberStatus) settled() bool {
	return s.ObservedGeneration >= s.Generation && s.UpdatedReplicas == s.Replicas &&
		s.AvailableReplicas == s.Replicas && s.UnavailableReplicas == 0
}

// PodTemplateHash is a hash of workload's pod template (spec.template), as rendered for one cluster.
func PodTemplateHash(workload *unstructured.Unstructured) (string, error) {
	pods, _, _ := unstructured.NestedFieldNoCopy(workload.Object, "spec", "template")
	raw, err := json.Marshal(pods) // maps marshal with sorted keys: equal templates, equal bytes
	if err != nil {
		return "", err
	}
	h := fnv.New64a()
	h.Write(raw)
	return strconv.FormatUint(h.Sum64(), 16), nil
}

// Classify says where a cluster stands, from existing, its Work as it is (nil: it has none yet), and desired, the
// workload just rendered for it; known is false when the member's report on its copy is missing or unreadable
// (its cluster not ready, say):
//   - a cluster whose turn began (its Work shows phase Rolling) keeps it, through further new pod templates, until
//     it reports the pod template it holds settled: every wanted pod updated and available;
//   - one given a pod template other than the one it had, or whose copy was paused (held for a turn, or by the
//     template's owner, who has since resumed it), waits for a turn, unless it has no pods or, unchanged, its pods
//     already run that pod template;
//   - anything else is Idle: a new copy, one given the pod template it has. Scaling is no rollout.
//
// A report is taken as one about the copy as it is only when it carries the pod template hash the copy was
// stamped with (Amend); a copy never stamped (not paced before) takes any report.
func Classify(existing *workv1alpha1.Work, desired *unstructured.Unstructured) (phase Phase, known bool, err error) {
	if existing == nil || len(existing.Spec.Workload.Manifests) == 0 {
		return Idle, true, nil // a new copy: its pods are made, none replaced
	}
	var before unstructured.Unstructured
	if err := before.UnmarshalJSON(existing.Spec.Workload.Manifests[0].Raw); err != nil {
		return Idle, false, fmt.Errorf("the Work's workload: %w", err)
	}
	paused, _, _ := unstructured.NestedBool(before.Object, "spec", "paused")
	inTurn := !paused && existing.Annotations[names.RolloutPhaseAnnotation] == Rolling.String()
	oldPods, _, _ := unstructured.NestedFieldNoCopy(before.Object, "spec", "template")
	newPods, _, _ := unstructured.NestedFieldNoCopy(desired.Object, "spec", "template")
	changed := !equality.Semantic.DeepEqual(oldPods, newPods)
	st := workloadStatus(existing)
	stamp, stamped := before.GetAnnotations()[names.PodTemplateHashAnnotation]
	current := st != nil && (!stamped || (st.PodTemplateHash != nil && *st.PodTemplateHash == stamp))
	// done: the member reports its copy as it is, settled, and the copy keeps its pod template.
	done := current && !changed && st.settled()
	switch {
	case inTurn && done:
		return Idle, true, nil
	case inTurn:
		return Rolling, st != nil, nil
	case !changed && !paused:
		return Idle, st != nil, nil
	case st == nil:
		return Waiting, false, nil
	case st.Replicas == 0 && st.UnavailableReplicas == 0:
		return Idle, true, nil // no pods, none wanted
	case done:
		return Idle, true, nil // paused, but its pods already run this pod template
	default:
		return Waiting, true, nil
	}
}

// Granted is the share of the budget a cluster's Work gives it while its turn goes on: the rolling update Amend
// wrote into its workload. It is zero when the Work is not rolling, or says nothing Amend would write.
func Granted(existing *workv1alpha1.Work) Grant {
	if existing == nil || existing.Annotations[names.RolloutPhaseAnnotation] != Rolling.String() || len(existing.Spec.Workload.Manifests) == 0 {
		return Grant{}
	}
	var w unstructured.Unstructured
	if err := w.UnmarshalJSON(existing.Spec.Workload.Manifests[0].Raw); err != nil {
		return Grant{}
	}
	u, _, _ := unstructured.NestedInt64(w.Object, "spec", "strategy", "rollingUpdate", "maxUnavailable")
	s, _, _ := unstructured.NestedInt64(w.Object, "spec", "strategy", "rollingUpdate", "maxSurge")
	if u < 0 || s < 0 || u > math.MaxInt32 || s > math.MaxInt32 {
		return Grant{}
	}
	return Grant{MaxUnavailable: int32(u), MaxSurge: int32(s)}
}

// workloadStatus is the status the member reported for the Work's workload (its first manifest); nil when there
// is none, or none this package can read (a status customization's own shape).
func workloadStatus(w *workv1alpha1.Work) *memberStatus {
	for _, ms := range w.Status.ManifestStatuses {
		if ms.Identifier.Ordinal != 0 || ms.Status == nil || len(ms.Status.Raw) == 0 {
			continue
		}
		var st memberStatus
		if json.Unmarshal(ms.Status.Raw, &st) != nil {
			return nil
		}
		return &st
	}
	return nil
}

// Amend writes into workload, a cluster's rendered Deployment (which rendering stamped with the template generation
// it comes from, interpreter.TemplateGenerationAnnotation), the hash of its pod template (which its reported status
// then carries) and, for a cluster in phase Rolling or Waiting, its grant: its share of the budget, or paused and
// marked held.
func Amend(workload *unstructured.Unstructured, phase Phase, g Grant) error {
	annotations := workload.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	hash, err := PodTemplateHash(workload)
	if err != nil {
		return err
	}
	annotations[names.PodTemplateHashAnnotation] = hash
	delete(annotations, names.RolloutHeldAnnotation)
	if phase != Idle && g.Hold {
		annotations[names.RolloutHeldAnnotation] = "true"
		if err := unstructured.SetNestedField(workload.Object, true, "spec", "paused"); err != nil {
			return err
		}
	}
	workload.SetAnnotations(annotations)
	if phase == Idle || g.Hold {
		return nil
	}
	if err := unstructured.SetNestedField(workload.Object, int64(g.MaxUnavailable), "spec", "strategy", "rollingUpdate", "maxUnavailable"); err != nil {
		return err
	}
	return unstructured.SetNestedField(workload.Object, int64(g.MaxSurge), "spec", "strategy", "rollingUpdate", "maxSurge")
}
