package execution

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/member"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/rendering"
	"github.com/fedmesh/fedmesh/pkg/federation/workrecord"
)

// The reasons of the Applied condition.
const (
	ReasonApplied            = "Applied"
	ReasonConflictAbort      = "ConflictAbort"
	ReasonClusterUnreachable = "ClusterUnreachable"
	ReasonClusterNotReady    = "ClusterNotReady"
	ReasonInvalidManifest    = "InvalidManifest"
	ReasonUnknownKind        = "UnknownKind"
	ReasonApplyFailed        = "ApplyFailed"
)

// invalidManifestError is a manifest that is not an object fedmesh can apply.
type invalidManifestError struct {
	ordinal int
	err     error
}

func (e *invalidManifestError) Error() string {
	return fmt.Sprintf("manifest %d: %v", e.ordinal, e.err)
}

func (e *invalidManifestError) Unwrap() error { return e.err }

// decodeManifest turns manifest ordinal into the object to apply: the fields only a server sets (uid,
// resourceVersion, managedFields, owner references of the host, status) are dropped, since an apply must not carry
// them.
func decodeManifest(ordinal int, m workv1alpha1.Manifest) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	var err error
	switch {
	case m.Object != nil:
		obj.Object, err = runtime.DefaultUnstructuredConverter.ToUnstructured(m.Object)
	case len(m.Raw) > 0:
		err = obj.UnmarshalJSON(m.Raw)
	default:
		err = errors.New("empty")
	}
	if err != nil {
		return nil, &invalidManifestError{ordinal: ordinal, err: err}
	}
	if obj.GetKind() == "" || obj.GetAPIVersion() == "" || obj.GetName() == "" {
		return nil, &invalidManifestError{ordinal: ordinal, err: errors.New("apiVersion, kind and metadata.name are required")}
	}
	for _, f := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
		"deletionGracePeriodSeconds", "managedFields", "ownerReferences", "selfLink"} {
		unstructured.RemoveNestedField(obj.Object, "metadata", f)
	}
	delete(obj.Object, "status")
	return obj, nil
}

// setIdentity marks obj's own metadata as work's: names.AppliedLabels, and names.AppliedAnnotations when the Work's
// name is too long for a label. Pod templates are left alone: a label there would roll out new pods, and taking
// over a running workload must not.
func setIdentity(obj *unstructured.Unstructured, work *workv1alpha1.Work) {
	obj.SetLabels(merged(obj.GetLabels(), names.AppliedLabels(work.Namespace, work.Name)))
	if a := names.AppliedAnnotations(work.Name); len(a) > 0 {
		obj.SetAnnotations(merged(obj.GetAnnotations(), a))
	}
}

// merged is m with add's entries set; m may be nil.
func merged(m, add map[string]string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	for k, v := range add {
		m[k] = v
	}
	return m
}

// appliedByFedmesh reports whether observed, an object in a member, was applied by fedmesh: it carries the managed
// label, or fedmesh's field manager owns some of its fields.
func appliedByFedmesh(observed *unstructured.Unstructured) bool {
	if observed.GetLabels()[names.ManagedLabel] == "true" {
		return true
	}
	for _, f := range observed.GetManagedFields() {
		if f.Manager == names.FieldManager {
			return true
		}
	}
	return false
}

// belongsTo reports whether observed carries work's identity.
func belongsTo(observed *unstructured.Unstructured, work *workv1alpha1.Work) bool {
	from, ok := names.AppliedFrom(observed)
	return ok && from == types.NamespacedName{Namespace: work.Namespace, Name: work.Name}
}

// conflictError is an object that exists in the member, was not applied by fedmesh, and may not be taken over.
type conflictError struct {
	ref      workrecord.Ref
	cluster  string
	managers []string
}

func (e *conflictError) Error() string {
	by := ""
	if len(e.managers) > 0 {
		by = " (managed by " + strings.Join(e.managers, ", ") + ")"
	}
	return fmt.Sprintf("%s already exists in cluster %s and was not created by fedmesh%s; conflictResolution is Abort, "+
		"so it is left alone: set conflictResolution: Overwrite on the policy to take it over", e.ref, e.cluster, by)
}

// checkConflict returns a conflictError when observed may not be applied to under resolution.
func checkConflict(observed *unstructured.Unstructured, cluster string, resolution policyv1alpha1.ConflictResolution) error {
	if observed == nil || appliedByFedmesh(observed) || resolution == policyv1alpha1.ConflictOverwrite {
		return nil
	}
	var managers []string
	for _, f := range observed.GetManagedFields() {
		if !slices.Contains(managers, f.Manager) {
			managers = append(managers, f.Manager)
		}
	}
	return &conflictError{ref: workrecord.RefOf(observed), cluster: cluster, managers: managers}
}

// reason classifies an error of applying or deleting a manifest. Errors that are not API answers mean the member
// was not reached, and so does a kind the member's discovery failed to read: its API does not answer.
func reason(err error) string {
	var conflict *conflictError
	var notReady *notReadyError
	var unreached *unreachableError
	var undiscovered *member.DiscoveryFailedError
	var invalid *invalidManifestError
	var status interface{ Status() metav1.Status }
	switch {
	case err == nil:
		return ReasonApplied
	case errors.As(err, &conflict):
		return ReasonConflictAbort
	case errors.As(err, &notReady):
		return ReasonClusterNotReady
	case errors.As(err, &unreached), errors.As(err, &undiscovered):
		return ReasonClusterUnreachable
	case errors.As(err, &invalid):
		return ReasonInvalidManifest
	case meta.IsNoMatchError(err):
		return ReasonUnknownKind
	case errors.As(err, &status):
		return ReasonApplyFailed
	default:
		return ReasonClusterUnreachable
	}
}

// retryable reports whether an error may go away by itself, so the Work is retried with backoff; a conflict or an
// invalid manifest waits for a change instead, and a cluster not Ready for the Cluster to turn Ready.
func retryable(err error) bool {
	switch reason(err) {
	case ReasonConflictAbort, ReasonInvalidManifest, ReasonClusterNotReady, ReasonApplied:
		return false
	}
	return true
}

// appliedCondition summarizes the errors of one pass over a Work's manifests: True when there are none, otherwise
// False with the reason of the first and every message.
func appliedCondition(errs []error, generation int64) metav1.Condition {
	c := metav1.Condition{Type: workv1alpha1.WorkApplied, ObservedGeneration: generation}
	var msgs []string
	for _, err := range errs {
		if err == nil {
			continue
		}
		if c.Reason == "" {
			c.Reason = reason(err)
		}
		msgs = append(msgs, err.Error())
	}
	if len(msgs) == 0 {
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, ReasonApplied, "every manifest is applied"
		return c
	}
	c.Status, c.Message = metav1.ConditionFalse, strings.Join(msgs, "; ")
	return c
}

// missingInMember reports whether work, applied in full at its generation, has a manifest whose object its status
// does not list. The work-status stage lists, by ordinal, each object it finds in the member, so that object is
// not there: deleted there, or not seen there yet. A Work not applied at its generation is false: it is being
// applied anyway (a new generation) or retried (a failed apply). An object recorded finished, for the run its
// manifest asks for, is not missing: it is not applied again (FinishedAnnotation).
func missingInMember(work *workv1alpha1.Work) bool {
	if c, current := rendering.AppliedCondition(work); !current || c.Status != metav1.ConditionTrue {
		return false
	}
	finished := finishedRecord(work.Annotations)
	for i, m := range work.Spec.Workload.Manifests {
		listed := func(s workv1alpha1.ManifestStatus) bool { return s.Identifier.Ordinal == int32(i) }
		if slices.ContainsFunc(work.Status.ManifestStatuses, listed) {
			continue
		}
		obj, err := decodeManifest(i, m)
		if err != nil {
			return true
		}
		ref := workrecord.RefOf(obj)
		if skip, _ := finishedDecision(recordedEntry(finished, ref, work.Namespace), ref, runKey(obj), false, false); !skip {
			return true
		}
	}
	return false
}

// unreachable marks a failure to get a member client as the member not being reached, whatever its cause.
func unreachable(err error) error {
	return &unreachableError{err: err}
}

type unreachableError struct{ err error }

func (e *unreachableError) Error() string { return e.err.Error() }
func (e *unreachableError) Unwrap() error { return e.err }
