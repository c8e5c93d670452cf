package execution

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/workrecord"
)

// TestFinishedDecision: a Job recorded finished and gone is not applied again while its manifest asks for the run
// recorded; a manifest asking for another run applies it and drops the record; a record written before runs were
// recorded takes the manifest's run.
func TestFinishedDecision(t *testing.T) {
	ref := workrecord.Ref{APIVersion: "batch/v1", Kind: "Job", Name: "migrate"}
	entry := func(run string) *finishedEntry { return &finishedEntry{Ref: ref, Run: run} }
	const run = "generation/2"
	for _, tc := range []struct {
		name                    string
		recorded                *finishedEntry
		present, statusFinished bool
		skip                    bool
		keep                    *finishedEntry
	}{
		{"running", nil, true, false, false, nil},
		{"deleted in the member before it finished", nil, false, false, false, nil},
		{"finished, still there", nil, true, true, false, entry(run)},
		{"finished and cleaned up before it was recorded", nil, false, true, true, entry(run)},
		{"recorded, cleaned up", entry(run), false, false, true, entry(run)},
		{"recorded, still there", entry(run), true, true, false, entry(run)},
		{"recorded, still there, the status not read yet", entry(run), true, false, false, entry(run)},
		{"another run recorded, cleaned up: the new run", entry("generation/1"), false, false, false, nil},
		{"another run recorded, its status not yet gone", entry("generation/1"), false, true, false, nil},
		{"another run recorded, still there: it keeps its run", entry("generation/1"), true, true, false, entry("generation/1")},
		{"recorded without a run, cleaned up", entry(""), false, false, true, entry(run)},
		{"recorded without a run, still there", entry(""), true, true, false, entry(run)},
	} {
		skip, keep := finishedDecision(tc.recorded, ref, run, tc.present, tc.statusFinished)
		if skip != tc.skip {
			t.Errorf("%s: skip %v, want %v", tc.name, skip, tc.skip)
		}
		switch {
		case (keep == nil) != (tc.keep == nil):
			t.Errorf("%s: keep %+v, want %+v", tc.name, keep, tc.keep)
		case keep != nil && *keep != *tc.keep:
			t.Errorf("%s: keep %+v, want %+v", tc.name, *keep, *tc.keep)
		}
	}
}

// TestRunKey: the template generation stamp names the run, whatever else the manifest says; without it, the spec.
func TestRunKey(t *testing.T) {
	job := func(generation string, parallelism int64, image string, labels map[string]any) *unstructured.Unstructured {
		md := map[string]any{"name": "migrate", "labels": labels}
		if generation != "" {
			md["annotations"] = map[string]any{interpreter.TemplateGenerationAnnotation: generation}
		}
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": md,
			"spec": map[string]any{"parallelism": parallelism, "template": map[string]any{"spec": map[string]any{
				"containers": []any{map[string]any{"name": "m", "image": image}}}}}}}
	}
	base := job("1", 2, "migrate:1", nil)
	for _, tc := range []struct {
		name string
		a, b *unstructured.Unstructured
		same bool
	}{
		{"unchanged", base, job("1", 2, "migrate:1", nil), true},
		{"new labels", base, job("1", 2, "migrate:1", map[string]any{"team": "db"}), true},
		{"parallelism divided anew", base, job("1", 3, "migrate:1", nil), true},
		{"a new template generation", base, job("2", 2, "migrate:2", nil), false},
		{"unstamped, unchanged", job("", 2, "migrate:1", nil), job("", 2, "migrate:1", map[string]any{"team": "db"}), true},
		{"unstamped, spec changed", job("", 2, "migrate:1", nil), job("", 2, "migrate:2", nil), false},
	} {
		if got := runKey(tc.a) == runKey(tc.b); got != tc.same {
			t.Errorf("%s: %s and %s, want same=%v", tc.name, runKey(tc.a), runKey(tc.b), tc.same)
		}
	}
	if got := runKey(base); got != "generation/1" {
		t.Errorf("runKey %s, want generation/1", got)
	}
}

// TestFinishedPredicates: a Job whose recorded status shows it Complete or Failed and that the record lacks wakes
// a pass, which records it; a Job recorded finished, for the run its manifest asks for, and gone from the member's
// status is not missing.
func TestFinishedPredicates(t *testing.T) {
	job := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": "migrate"}}}
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "migrate"}}}
	jobID := workv1alpha1.ResourceIdentifier{Ordinal: 0, Group: "batch", Version: "v1", Kind: "Job", Resource: "jobs", Namespace: "shop", Name: "migrate"}
	cmID := workv1alpha1.ResourceIdentifier{Ordinal: 1, Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "shop", Name: "migrate"}
	status := func(id workv1alpha1.ResourceIdentifier, raw string) workv1alpha1.ManifestStatus {
		return workv1alpha1.ManifestStatus{Identifier: id, Status: &runtime.RawExtension{Raw: []byte(raw)}, Health: workv1alpha1.ResourceHealthy}
	}
	ref := workrecord.Ref{APIVersion: "batch/v1", Kind: "Job", Name: "migrate"}
	recorded := formatFinished([]finishedEntry{{Ref: ref, Run: runKey(job)}})
	legacy := workrecord.Format([]workrecord.Ref{ref}) // written before runs were recorded
	otherRun := formatFinished([]finishedEntry{{Ref: ref, Run: "generation/7"}})
	for _, tc := range []struct {
		name       string
		record     string
		statuses   []workv1alpha1.ManifestStatus
		unrecorded bool // objectFinished passes
		missing    bool // objectMissing passes
	}{
		{"running", "", []workv1alpha1.ManifestStatus{status(jobID, `{"active":1}`), status(cmID, `{}`)}, false, false},
		{"complete", "", []workv1alpha1.ManifestStatus{status(jobID, `{"conditions":[{"type":"SuccessCriteriaMet","status":"True"},{"type":"Complete","status":"True"}]}`), status(cmID, `{}`)}, true, false},
		{"failed", "", []workv1alpha1.ManifestStatus{status(jobID, `{"conditions":[{"type":"Failed","status":"True"}]}`), status(cmID, `{}`)}, true, false},
		{"a condition not True", "", []workv1alpha1.ManifestStatus{status(jobID, `{"conditions":[{"type":"Complete","status":"False"}]}`), status(cmID, `{}`)}, false, false},
		{"a ConfigMap with a Complete condition is no Job", "", []workv1alpha1.ManifestStatus{status(jobID, `{}`), status(cmID, `{"conditions":[{"type":"Complete","status":"True"}]}`)}, false, false},
		{"complete and recorded", recorded, []workv1alpha1.ManifestStatus{status(jobID, `{"conditions":[{"type":"Complete","status":"True"}]}`), status(cmID, `{}`)}, false, false},
		{"complete, another run recorded", otherRun, []workv1alpha1.ManifestStatus{status(jobID, `{"conditions":[{"type":"Complete","status":"True"}]}`), status(cmID, `{}`)}, false, false},
		{"recorded, then cleaned up in the member", recorded, []workv1alpha1.ManifestStatus{status(cmID, `{}`)}, false, false},
		{"recorded without a run, then cleaned up", legacy, []workv1alpha1.ManifestStatus{status(cmID, `{}`)}, false, false},
		{"another run recorded, cleaned up: the new one is missing", otherRun, []workv1alpha1.ManifestStatus{status(cmID, `{}`)}, false, true},
		{"cleaned up before it was recorded", "", []workv1alpha1.ManifestStatus{status(cmID, `{}`)}, false, true},
		{"recorded, the other object gone", recorded, []workv1alpha1.ManifestStatus{status(jobID, `{}`)}, false, true},
		{"a damaged record", "{", []workv1alpha1.ManifestStatus{status(cmID, `{}`)}, false, true},
	} {
		w := work("migrate-job-member1", "member1", "", job, cm)
		w.Generation = 1
		if tc.record != "" {
			w.Annotations = map[string]string{FinishedAnnotation: tc.record}
		}
		w.Status = workv1alpha1.WorkStatus{ManifestStatuses: tc.statuses, Conditions: []metav1.Condition{
			{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionTrue, ObservedGeneration: 1, Reason: ReasonApplied}}}
		if got := objectFinished.Update(event.UpdateEvent{ObjectOld: w, ObjectNew: w}); got != tc.unrecorded {
			t.Errorf("%s: objectFinished passed %v, want %v", tc.name, got, tc.unrecorded)
		}
		if got := objectMissing.Update(event.UpdateEvent{ObjectOld: w, ObjectNew: w}); got != tc.missing {
			t.Errorf("%s: objectMissing passed %v, want %v", tc.name, got, tc.missing)
		}
	}
}
