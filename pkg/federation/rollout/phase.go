package rollout

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
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
	Replicas            int32 `json:"replicas"`
	UpdatedReplicas     int32 `json:"updatedReplicas"`
	AvailableReplicas   int32 `json:"availableReplicas"`
	UnavailableReplicas int32 `json:"unavailableReplicas"`
	ObservedGeneration  int64 `json:"observedGeneration"`
	Generation          int64 `json:"generation"`
	// PodTemplateHash and TemplateGeneration are those Amend stamped on the member's object.
	PodTemplateHash    *string `json:"podTemplateHash"`
	TemplateGeneration *int64  `json:"templateGeneration"`
}

// reports reports whether the status is about the pod template of hash (or, where a status interpreter left the
// hash out, the template of generation; with neither, any report is taken as current).
func (s *memberStatus) reports(hash string, generation int64) bool {
	switch {
	case s.PodTemplateHash != nil:
		return *s.PodTemplateHash == hash
	case s.TemplateGeneration != nil:
		return *s.TemplateGeneration == generation
	}
	return true
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

// Classify says where a cluster stands, from existing, its Work as it is (nil: it has none yet), desired, the
// workload just rendered for it, and generation, the template's:
//   - a cluster whose turn began (its Work shows phase Rolling) keeps it, through further new pod templates, until
//     it reports the pod template it holds settled: every wanted pod updated and available;
//   - one given a pod template other than the one it had, or held, waits for a turn, unless it has no pods;
//   - anything else is Idle: a new copy, one given the pod template it has, one already running what it was held
//     with. Scaling is no rollout.
func Classify(existing *workv1alpha1.Work, desired *unstructured.Unstructured, generation int64) (Phase, error) {
	if existing == nil || len(existing.Spec.Workload.Manifests) == 0 {
		return Idle, nil // a new copy: its pods are made, none replaced
	}
	var before unstructured.Unstructured
	if err := before.UnmarshalJSON(existing.Spec.Workload.Manifests[0].Raw); err != nil {
		return Idle, fmt.Errorf("the Work's workload: %w", err)
	}
	held := before.GetAnnotations()[names.RolloutHeldAnnotation] == "true"
	inTurn := !held && existing.Annotations[names.RolloutPhaseAnnotation] == Rolling.String()
	oldPods, _, _ := unstructured.NestedFieldNoCopy(before.Object, "spec", "template")
	newPods, _, _ := unstructured.NestedFieldNoCopy(desired.Object, "spec", "template")
	changed := !equality.Semantic.DeepEqual(oldPods, newPods)
	hash, err := PodTemplateHash(desired)
	if err != nil {
		return Idle, err
	}
	st, err := workloadStatus(existing)
	if err != nil {
		return Idle, err
	}
	// done: the member reports the pod template it is given now, settled. A report that is not known (none yet,
	// the cluster not ready) is no end of a turn.
	done := st != nil && !changed && st.reports(hash, generation) && st.settled()
	switch {
	case inTurn:
		if done {
			return Idle, nil
		}
		return Rolling, nil
	case !changed && !held:
		return Idle, nil
	case st == nil:
		return Waiting, nil // what runs there is not known yet
	case st.Replicas == 0 && st.UnavailableReplicas == 0:
		return Idle, nil // no pods, none wanted
	case done:
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

// Amend writes into workload, a cluster's rendered Deployment, the template generation it comes from and the hash
// of its pod template (which its reported status then carries) and, for a cluster in phase Rolling or Waiting, its grant: its share of the budget,
// or paused and marked held.
func Amend(workload *unstructured.Unstructured, generation int64, phase Phase, g Grant) error {
	annotations := workload.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[interpreter.TemplateGenerationAnnotation] = strconv.FormatInt(generation, 10)
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
