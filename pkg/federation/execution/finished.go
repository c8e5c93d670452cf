package execution

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"sort"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/workrecord"
)

// FinishedAnnotation on a Work lists, as JSON, the objects of its manifests that ran to their end in the member (a
// Job Complete or Failed), as the Work's status recorded them, each with the run it finished (runKey). Such an
// object gone from the member was cleaned up there (a Job's ttlSecondsAfterFinished, which the member copy keeps:
// the user asked for that cleanup) and is not applied again while its manifest asks for that same run: that would
// run it again, and again after each cleanup. A manifest asking for another run (its template's spec changed) is
// applied, and the record of the old run goes. The record is kept on the Work, not taken from its status, because
// the status loses the object's entry as soon as the object is gone, and after a restart or while its cluster is
// not Ready.
const FinishedAnnotation = "work.fedmesh.io/finished-objects"

var jobKind = schema.GroupKind{Group: "batch", Kind: "Job"}

// finishedEntry is one object of FinishedAnnotation. Run is empty in a record written before runs were recorded:
// it is taken for the run the manifest asks for now, so an upgrade runs nothing again.
type finishedEntry struct {
	workrecord.Ref
	Run string `json:"run,omitempty"`
}

// runKey names the run a Job manifest asks for. The binding stamps the workload with its template's generation
// (interpreter.TemplateGenerationAnnotation), which changes with the template's spec only: not with a new division
// of the Job's parallelism among clusters, nor with its labels. A manifest without the stamp (a Work written by
// hand) is named by a hash of its spec.
func runKey(desired *unstructured.Unstructured) string {
	if g, ok := desired.GetAnnotations()[interpreter.TemplateGenerationAnnotation]; ok {
		return "generation/" + g
	}
	b, _ := json.Marshal(desired.Object["spec"]) // encoding/json sorts map keys: the same spec, the same bytes
	sum := sha256.Sum256(b)
	return "spec/" + hex.EncodeToString(sum[:8])
}

// finishedDecision decides, for the object of one manifest, whether it is left out of the pass (skip: it finished
// and is gone, and the manifest asks for that same run) and what the record keeps of it (nil: nothing). recorded
// is its entry in the record (nil: none), run the manifest's runKey, present whether the object is in the member,
// statusFinished whether the Work's status shows it finished.
func finishedDecision(recorded *finishedEntry, ref workrecord.Ref, run string, present, statusFinished bool) (skip bool, keep *finishedEntry) {
	if recorded != nil {
		same := recorded.Run == run || recorded.Run == ""
		switch {
		case present:
			// The object recorded, still there: it keeps the run it finished, whatever the manifest says now, so
			// the manifest's new run is applied once the member cleans the old one up.
			if recorded.Run == "" {
				return false, &finishedEntry{Ref: recorded.Ref, Run: run}
			}
			return false, recorded
		case same:
			return true, &finishedEntry{Ref: recorded.Ref, Run: run}
		default:
			// Another run: it is created now, and its own end is recorded when the status shows it.
			return false, nil
		}
	}
	if statusFinished {
		// Gone already or not, it ran to its end for the manifest as it is now.
		return !present, &finishedEntry{Ref: ref, Run: run}
	}
	return false, nil
}

// finishedRecord reads the record of finished objects from a Work's annotations; a damaged record reads as empty.
func finishedRecord(annotations map[string]string) []finishedEntry {
	var entries []finishedEntry
	if s := annotations[FinishedAnnotation]; s != "" {
		if err := json.Unmarshal([]byte(s), &entries); err != nil {
			return nil
		}
	}
	return entries
}

// formatFinished is the annotation's value for entries, in a stable order; "" for none.
func formatFinished(entries []finishedEntry) string {
	if len(entries) == 0 {
		return ""
	}
	entries = slices.Clone(entries)
	sort.Slice(entries, func(i, j int) bool {
		return entries[i].String()+entries[i].APIVersion < entries[j].String()+entries[j].APIVersion
	})
	b, _ := json.Marshal(entries)
	return string(b)
}

// recordedEntry is the entry of entries for ref, nil when there is none.
func recordedEntry(entries []finishedEntry, ref workrecord.Ref, workNamespace string) *finishedEntry {
	i := slices.IndexFunc(entries, func(e finishedEntry) bool { return workrecord.Same(e.Ref, ref, workNamespace) })
	if i < 0 {
		return nil
	}
	return &entries[i]
}

// finishedInStatus are the objects work's manifestStatuses show finished now.
func finishedInStatus(work *workv1alpha1.Work) []workrecord.Ref {
	var refs []workrecord.Ref
	for _, s := range work.Status.ManifestStatuses {
		id := s.Identifier
		if (schema.GroupKind{Group: id.Group, Kind: id.Kind}) != jobKind || !finishedStatus(s.Status) {
			continue
		}
		refs = append(refs, workrecord.Ref{APIVersion: schema.GroupVersion{Group: id.Group, Version: id.Version}.String(),
			Kind: id.Kind, Namespace: id.Namespace, Name: id.Name})
	}
	return refs
}

// finishedUnrecorded reports whether work's status shows an object finished that its record holds no entry for.
// An entry of another run is left to the pass that created the new run: that pass dropped it.
func finishedUnrecorded(work *workv1alpha1.Work) bool {
	record := finishedRecord(work.Annotations)
	for _, ref := range finishedInStatus(work) {
		if recordedEntry(record, ref, work.Namespace) == nil {
			return true
		}
	}
	return false
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
