package execution

import (
	"encoding/json"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/workrecord"
)

// FinishedAnnotation on a Work lists, as JSON refs, the objects of its manifests that ran to their end in the
// member (a Job Complete or Failed), as the Work's status recorded them. Such an object gone from the member was
// cleaned up there (a Job's ttlSecondsAfterFinished, which the member copy keeps: the user asked for that cleanup)
// and is not applied again: that would run it again, and again after each cleanup. The template in the host stays.
// The record is kept on the Work, not taken from its status, because the status loses the object's entry as soon
// as the object is gone, and after a restart or while its cluster is not Ready.
const FinishedAnnotation = "work.fedmesh.io/finished-objects"

var jobKind = schema.GroupKind{Group: "batch", Kind: "Job"}

// finishedRecord reads the record of finished objects from a Work's annotations; a damaged record reads as empty.
func finishedRecord(annotations map[string]string) []workrecord.Ref {
	var refs []workrecord.Ref
	if s := annotations[FinishedAnnotation]; s != "" {
		if err := json.Unmarshal([]byte(s), &refs); err != nil {
			return nil
		}
	}
	return refs
}

// finishedObjects is the Work's record of finished objects with those its manifestStatuses show finished now.
func finishedObjects(work *workv1alpha1.Work) []workrecord.Ref {
	refs := finishedRecord(work.Annotations)
	for _, s := range work.Status.ManifestStatuses {
		id := s.Identifier
		if (schema.GroupKind{Group: id.Group, Kind: id.Kind}) != jobKind || !finishedStatus(s.Status) {
			continue
		}
		ref := workrecord.Ref{APIVersion: schema.GroupVersion{Group: id.Group, Version: id.Version}.String(),
			Kind: id.Kind, Namespace: id.Namespace, Name: id.Name}
		if !finishedIn(refs, ref, work.Namespace) {
			refs = append(refs, ref)
		}
	}
	return refs
}

// finishedUnrecorded reports whether work's status shows an object finished that its record does not hold yet.
func finishedUnrecorded(work *workv1alpha1.Work) bool {
	return len(finishedObjects(work)) > len(finishedRecord(work.Annotations))
}

// finishedIn reports whether refs hold ref.
func finishedIn(refs []workrecord.Ref, ref workrecord.Ref, workNamespace string) bool {
	return slices.ContainsFunc(refs, func(r workrecord.Ref) bool { return workrecord.Same(r, ref, workNamespace) })
}

// finishedStatus reports whether a Job's recorded status shows it finished: a Complete or Failed condition that is
// True. Neither is ever taken back.
func finishedStatus(raw *runtime.RawExtension) bool {
	if raw == nil || len(raw.Raw) == 0 {
		return false
	}
	var s struct {
		Conditions []struct {
			Type   string                 `json:"type"`
			Status metav1.ConditionStatus `json:"status"`
		} `json:"conditions"`
	}
	if err := json.Unmarshal(raw.Raw, &s); err != nil {
		return false
	}
	for _, c := range s.Conditions {
		if (c.Type == string(batchv1.JobComplete) || c.Type == string(batchv1.JobFailed)) && c.Status == metav1.ConditionTrue {
			return true
		}
	}
	return false
}
