package rollout

import (
	"encoding/json"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
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
	Replicas           int32 `json:"replicas"`
	UpdatedReplicas    int32 `json:"updatedReplicas"`
	AvailableReplicas  int32 `json:"availableReplicas"`
	ObservedGeneration int64 `json:"observedGeneration"`
	Generation         int64 `json:"generation"`
	// TemplateGeneration is the template generation the member's object was applied from (Amend stamps it).
	TemplateGeneration *int64 `json:"templateGeneration"`
}

// rolledOut reports whether the member has caught up with the template of generation and every one of its pods
// runs the pod template it holds and is available.
func (s *memberStatus) rolledOut(generation int64) bool {
	if s.TemplateGeneration != nil && *s.TemplateGeneration != generation {
		return false
	}
	return s.ObservedGeneration >= s.Generation && s.UpdatedReplicas == s.Replicas && s.AvailableReplicas == s.Replicas
}

// Classify says where a cluster stands, from existing, its Work as it is (nil: it has none yet), desired, the
// workload just rendered for it, and generation, the template's. A cluster given a pod template other than the
// one it was given before, or held before, waits for a turn unless it has no pods to replace; one given the same
// pod template unpaused rolls until it reports that it has caught up with this generation and its pods are all
// updated and available.
func Classify(existing *workv1alpha1.Work, desired *unstructured.Unstructured, generation int64) (Phase, error) {
	if existing == nil || len(existing.Spec.Workload.Manifests) == 0 {
		return Idle, nil // a new copy: its pods are made, none replaced
	}
	var before unstructured.Unstructured
	if err := before.UnmarshalJSON(existing.Spec.Workload.Manifests[0].Raw); err != nil {
		return Idle, fmt.Errorf("the Work's workload: %w", err)
	}
	held := before.GetAnnotations()[names.RolloutHeldAnnotation] == "true"
	oldPods, _, _ := unstructured.NestedFieldNoCopy(before.Object, "spec", "template")
	newPods, _, _ := unstructured.NestedFieldNoCopy(desired.Object, "spec", "template")
	changed := !equality.Semantic.DeepEqual(oldPods, newPods)
	st, err := workloadStatus(existing)
	if err != nil {
		return Idle, err
	}
	switch {
	case !changed && !held:
		if st == nil || st.rolledOut(generation) {
			return Idle, nil
		}
		return Rolling, nil
	case st == nil:
		return Waiting, nil // what runs there is not known yet
	case st.Replicas == 0:
		return Idle, nil
	case !changed && st.rolledOut(generation):
		return Idle, nil // held, but its pods already run this pod template
	default:
		return Waiting, nil
	}
}

// workloadStatus is the status the member reported for the Work's workload (its first manifest), nil when none.
func workloadStatus(w *workv1alpha1.Work) (*memberStatus, error) {
	for _, ms := range w.Status.ManifestStatuses {
		if ms.Identifier.Ordinal != 0 || ms.Status == nil || len(ms.Status.Raw) == 0 {
			continue
		}
		var st memberStatus
		if err := json.Unmarshal(ms.Status.Raw, &st); err != nil {
			return nil, fmt.Errorf("the Work's reported status: %w", err)
		}
		return &st, nil
	}
	return nil, nil
}

// Amend writes into workload, a cluster's rendered Deployment, the template generation it comes from (which its
// reported status then carries) and, for a cluster in phase Rolling or Waiting, its grant: its share of the budget,
// or paused and marked held.
func Amend(workload *unstructured.Unstructured, generation int64, phase Phase, g Grant) error {
	annotations := workload.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[interpreter.TemplateGenerationAnnotation] = strconv.FormatInt(generation, 10)
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
