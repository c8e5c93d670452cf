package execution

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/workrecord"
)

// TestFinishedObjects: a Job whose recorded status shows it Complete or Failed joins the record of finished
// objects, which its pass writes; a Job recorded finished and gone from the member's status is not missing.
func TestFinishedObjects(t *testing.T) {
	job := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": "migrate"}}}
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "migrate"}}}
	jobID := workv1alpha1.ResourceIdentifier{Ordinal: 0, Group: "batch", Version: "v1", Kind: "Job", Resource: "jobs", Namespace: "shop", Name: "migrate"}
	cmID := workv1alpha1.ResourceIdentifier{Ordinal: 1, Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "shop", Name: "migrate"}
	status := func(id workv1alpha1.ResourceIdentifier, raw string) workv1alpha1.ManifestStatus {
		return workv1alpha1.ManifestStatus{Identifier: id, Status: &runtime.RawExtension{Raw: []byte(raw)}, Health: workv1alpha1.ResourceHealthy}
	}
	recorded := workrecord.Format([]workrecord.Ref{{APIVersion: "batch/v1", Kind: "Job", Name: "migrate"}})
	for _, tc := range []struct {
		name         string
		record       string
		statuses     []workv1alpha1.ManifestStatus
		wantFinished int
		unrecorded   bool // objectFinished passes
		missing      bool // objectMissing passes
	}{
		{"running", "", []workv1alpha1.ManifestStatus{status(jobID, `{"active":1}`), status(cmID, `{}`)}, 0, false, false},
		{"complete", "", []workv1alpha1.ManifestStatus{status(jobID, `{"conditions":[{"type":"SuccessCriteriaMet","status":"True"},{"type":"Complete","status":"True"}]}`), status(cmID, `{}`)}, 1, true, false},
		{"failed", "", []workv1alpha1.ManifestStatus{status(jobID, `{"conditions":[{"type":"Failed","status":"True"}]}`), status(cmID, `{}`)}, 1, true, false},
		{"a condition not True", "", []workv1alpha1.ManifestStatus{status(jobID, `{"conditions":[{"type":"Complete","status":"False"}]}`), status(cmID, `{}`)}, 0, false, false},
		{"a ConfigMap with a Complete condition is no Job", "", []workv1alpha1.ManifestStatus{status(jobID, `{}`), status(cmID, `{"conditions":[{"type":"Complete","status":"True"}]}`)}, 0, false, false},
		{"complete and recorded", recorded, []workv1alpha1.ManifestStatus{status(jobID, `{"conditions":[{"type":"Complete","status":"True"}]}`), status(cmID, `{}`)}, 1, false, false},
		{"recorded, then cleaned up in the member", recorded, []workv1alpha1.ManifestStatus{status(cmID, `{}`)}, 1, false, false},
		{"cleaned up before it was recorded", "", []workv1alpha1.ManifestStatus{status(cmID, `{}`)}, 0, false, true},
		{"recorded, the other object gone", recorded, []workv1alpha1.ManifestStatus{status(jobID, `{}`)}, 1, false, true},
		{"a damaged record", "{", []workv1alpha1.ManifestStatus{status(cmID, `{}`)}, 0, false, true},
	} {
		w := work("migrate-job-member1", "member1", "", job, cm)
		w.Generation = 1
		if tc.record != "" {
			w.Annotations = map[string]string{FinishedAnnotation: tc.record}
		}
		w.Status = workv1alpha1.WorkStatus{ManifestStatuses: tc.statuses, Conditions: []metav1.Condition{
			{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionTrue, ObservedGeneration: 1, Reason: ReasonApplied}}}
		if got := finishedObjects(w); len(got) != tc.wantFinished {
			t.Errorf("%s: finished %v, want %d", tc.name, got, tc.wantFinished)
		}
		if got := objectFinished.Update(event.UpdateEvent{ObjectOld: w, ObjectNew: w}); got != tc.unrecorded {
			t.Errorf("%s: objectFinished passed %v, want %v", tc.name, got, tc.unrecorded)
		}
		if got := objectMissing.Update(event.UpdateEvent{ObjectOld: w, ObjectNew: w}); got != tc.missing {
			t.Errorf("%s: objectMissing passed %v, want %v", tc.name, got, tc.missing)
		}
	}
}
