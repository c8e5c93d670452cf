package execution

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
	"github.com/fedmesh/fedmesh/pkg/federation/member"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/rendering"
	"github.com/fedmesh/fedmesh/pkg/federation/workrecord"
)

// applyWork applies every manifest of work and deletes the recorded objects it no longer has. It returns one
// error (or nil) per manifest and per removal; the error it returns itself is a failure to read or write the host.
func (r *Reconciler) applyWork(ctx context.Context, work *workv1alpha1.Work) ([]error, error) {
	mc, err := r.Members.Client(ctx, work.Spec.ClusterName)
	if err != nil {
		return []error{fmt.Errorf("cluster %s: %w", work.Spec.ClusterName, unreachable(err))}, nil
	}
	resolution, err := r.conflictResolution(ctx, work)
	if err != nil {
		return nil, err
	}
	fin := finishedState{record: finishedRecord(work.Annotations), inStatus: finishedInStatus(work)}
	var errs []error
	var current []workrecord.Ref
	var stillFinished []finishedEntry
	for i, m := range work.Spec.Workload.Manifests {
		ref, keep, err := r.applyManifest(ctx, mc, work, i, m, resolution, fin)
		var changed *changedWhileAppliedError
		for tries := 1; errors.As(err, &changed) && tries < changedWhileAppliedTries; tries++ {
			ref, keep, err = r.applyManifest(ctx, mc, work, i, m, resolution, fin)
		}
		errs = append(errs, err)
		if ref != nil {
			current = append(current, *ref)
			if keep == nil && err != nil {
				// A pass that failed may not have got as far as deciding: what was recorded stays.
				keep = recordedEntry(fin.record, *ref, work.Namespace)
			}
			if keep != nil {
				stillFinished = append(stillFinished, *keep)
			}
		}
	}

	var undeleted []workrecord.Ref
	for _, ref := range workrecord.Removed(workrecord.Parse(work.Annotations), current, work.Namespace) {
		if err := r.removeObject(ctx, mc, work, ref, ptr.Deref(work.Spec.PreserveResourcesOnDeletion, false)); err != nil {
			errs = append(errs, fmt.Errorf("removing %s, no longer in the Work: %w", ref, err))
			undeleted = append(undeleted, ref)
			continue
		}
		log.FromContext(ctx).Info("removed object no longer in the Work", "object", ref.String())
	}
	return errs, r.record(ctx, work, undeleted, stillFinished)
}

// record leaves in the Work's record only refs, the objects it no longer names that are still to be removed, and
// in its record of finished objects only finished, when that changes them. The write is conditional on the Work's
// records being as read: the binding stage adds to the record when it changes the manifests, and a record computed
// from an older Work must not drop that.
func (r *Reconciler) record(ctx context.Context, work *workv1alpha1.Work, refs []workrecord.Ref, finished []finishedEntry) error {
	annotations := map[string]any{}
	for key, value := range map[string]string{workrecord.Annotation: workrecord.Format(refs), FinishedAnnotation: formatFinished(finished)} {
		if work.Annotations[key] == value {
			continue
		}
		var v any
		if value != "" {
			v = value
		}
		annotations[key] = v
	}
	if len(annotations) == 0 {
		return nil
	}
	read := work
	for tries := 1; ; tries++ {
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"resourceVersion": read.ResourceVersion, "annotations": annotations}})
		if err != nil {
			return err
		}
		err = r.Client.Patch(ctx, work, client.RawPatch(types.MergePatchType, patch))
		if !apierrors.IsConflict(err) || tries == recordTries {
			return client.IgnoreNotFound(err)
		}
		// The work-status stage writes the Work's status often (a Job's progress): a newer resourceVersion whose
		// records and spec are as read leaves this record good, and it is written now. Left to a later pass,
		// which waits for the cache to catch up, a finished Job's cleanup in the member could drop it from the
		// status first, and the Job was run again.
		fresh := &workv1alpha1.Work{}
		if gerr := r.reader().Get(ctx, client.ObjectKeyFromObject(work), fresh); gerr != nil {
			return client.IgnoreNotFound(gerr)
		}
		if !sameRecords(work, fresh) {
			return err
		}
		read = fresh
	}
}

// recordTries is how many times record writes a record over newer versions of a Work whose records are unchanged.
const recordTries = 5

// sameRecords reports whether b has a's spec and records of applied and finished objects.
func sameRecords(a, b *workv1alpha1.Work) bool {
	return a.Generation == b.Generation && a.UID == b.UID &&
		a.Annotations[workrecord.Annotation] == b.Annotations[workrecord.Annotation] &&
		a.Annotations[FinishedAnnotation] == b.Annotations[FinishedAnnotation]
}

// reader reads the host past the cache; the Client when no APIReader is set.
func (r *Reconciler) reader() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}

// finishedState is what a pass knows of the Work's finished objects: its record, and those its status shows
// finished.
type finishedState struct {
	record   []finishedEntry
	inStatus []workrecord.Ref
}

// applyManifest applies manifest ordinal of work to the member, unless the member object is already as the
// manifest says and the Work has not changed since it was applied (needsApply), or it finished and is gone from
// the member and the manifest asks for no new run (finishedDecision, FinishedAnnotation). The ref is that of the
// object the manifest names, nil when the manifest cannot be read; the entry is what the record of finished objects
// keeps of it, nil for nothing.
func (r *Reconciler) applyManifest(ctx context.Context, mc *member.Client, work *workv1alpha1.Work, ordinal int,
	m workv1alpha1.Manifest, resolution policyv1alpha1.ConflictResolution, fin finishedState) (*workrecord.Ref, *finishedEntry, error) {
	desired, err := decodeManifest(ordinal, m)
	if err != nil {
		return nil, nil, err
	}
	ri, err := resourceFor(mc, desired, work.Namespace)
	var outside *outOfScopeError
	if errors.As(err, &outside) {
		return &outside.ref, nil, &invalidManifestError{ordinal: ordinal, err: outside}
	}
	if err != nil {
		ref := workrecord.RefOf(desired)
		return &ref, nil, fmt.Errorf("%s: %w", ref, err)
	}
	ref := workrecord.RefOf(desired)
	setIdentity(desired, work)
	native.LeaveToMember(desired)

	var before *unstructured.Unstructured // desired before Retain
	observed, err := ri.Get(ctx, desired.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		observed = nil
	case err != nil:
		return &ref, nil, fmt.Errorf("reading %s: %w", ref, err)
	}
	var keep *finishedEntry
	if desired.GroupVersionKind().GroupKind() == jobKind {
		var skip bool
		skip, keep = finishedDecision(recordedEntry(fin.record, ref, work.Namespace), ref, runKey(desired),
			observed != nil, finishedIn(fin.inStatus, ref, work.Namespace))
		if skip {
			log.FromContext(ctx).V(1).Info("finished and cleaned up in the member; not applied again", "object", ref.String())
			manifestsTotal.WithLabelValues("skipped").Inc()
			return &ref, keep, nil
		}
	}
	if observed != nil {
		if err := checkConflict(observed, work.Spec.ClusterName, resolution); err != nil {
			return &ref, keep, err
		}
		before = desired.DeepCopy()
		if desired, err = r.retain(ctx, desired, observed); err != nil {
			return &ref, keep, fmt.Errorf("%s: retaining the member's fields: %w", ref, err)
		}
	}
	// A skipped manifest counts as applied: the Work's record and its Applied condition stay as they are.
	need, why := needsApply(work, r.Verdicts.Current(work, work.Status.Conditions), desired, observed)
	if !need {
		log.FromContext(ctx).V(1).Info("member object already as desired; apply skipped", "object", ref.String())
		manifestsTotal.WithLabelValues("skipped").Inc()
		return &ref, keep, nil
	}
	log.FromContext(ctx).V(2).Info("applying", "object", ref.String(), "why", why)
	// Only now: telling may ask Retain again, which a pass that applies nothing need not.
	retained := observed != nil && r.tookMemberValues(ctx, before, desired, observed)
	if retained {
		// The member's values as read: applied over a newer write of them (an HPA scaling between that read and
		// this apply), they would put the old ones back. The read's resourceVersion makes the apply conditional on
		// the object being as read.
		desired.SetResourceVersion(observed.GetResourceVersion())
	}
	data, err := json.Marshal(desired.Object)
	if err != nil {
		return &ref, keep, &invalidManifestError{ordinal: ordinal, err: err}
	}
	// Forced, the federation's values win over what the member changed in fedmesh's object. Not an object just
	// found missing under Abort: one someone else creates between that read and this apply must stay theirs, and
	// an unforced apply meets their fields as a conflict wherever their values differ from the manifest's (where
	// all are the same, the object becomes fedmesh's as if fedmesh had made it).
	force := observed != nil || resolution == policyv1alpha1.ConflictOverwrite
	opts := metav1.PatchOptions{FieldManager: names.FieldManager, Force: ptr.To(force)}
	_, err = ri.Patch(ctx, desired.GetName(), types.ApplyPatchType, data, opts)
	if apierrors.IsNotFound(err) && desired.GetNamespace() != "" {
		// The template's namespace does not exist in the member yet: create it, as the namespace is part of what
		// the federation places there. It stays when the objects go, like any namespace someone created.
		if err := ensureNamespace(ctx, mc, desired.GetNamespace()); err != nil {
			return &ref, keep, fmt.Errorf("creating namespace %s for %s: %w", desired.GetNamespace(), ref, err)
		}
		_, err = ri.Patch(ctx, desired.GetName(), types.ApplyPatchType, data, opts)
	}
	if !force && apierrors.IsConflict(err) {
		return &ref, keep, &conflictError{ref: ref, cluster: work.Spec.ClusterName}
	}
	if retained && apierrors.IsConflict(err) {
		return &ref, keep, &changedWhileAppliedError{ref: ref, err: err}
	}
	if err != nil {
		return &ref, keep, fmt.Errorf("applying %s: %w", ref, err)
	}
	manifestsTotal.WithLabelValues("applied").Inc()
	return &ref, keep, nil
}

// tookMemberValues reports whether Retain, turning before into desired, put values read from observed in. A value
// that desired holds and before does not is one. Fields Retain only removed (left to the member) are not, nor
// nulls a Lua round trip dropped. A copy equal to the Work's own value shows in neither: the member's replica count
// (an HPA's), which Retains use most, equal to the Work's is the usual case of an HPA at rest. Then Retain is asked
// again of a member with one replica more, and one less: one whose answer moves with the member's count (a copy,
// or a copy within bounds) takes it from the member.
func (r *Reconciler) tookMemberValues(ctx context.Context, before, desired, observed *unstructured.Unstructured) bool {
	if _, onlyRemoved := contains(desired.Object, before.Object); !onlyRemoved {
		return true
	}
	theirs, ok := replicasOf(observed)
	if mine, _ := replicasOf(desired); !ok || mine != theirs {
		return false // a count taken from the member would equal it
	}
	for _, probe := range []int64{theirs + 1, theirs - 1} {
		if probe < 0 {
			continue
		}
		member := observed.DeepCopy()
		if err := unstructured.SetNestedField(member.Object, probe, "spec", "replicas"); err != nil {
			return true
		}
		out, err := r.retain(ctx, before.DeepCopy(), member)
		if err != nil {
			log.FromContext(ctx).V(1).Info("asking Retain again failed; the apply is conditional", "error", err.Error())
			return true // not known: conditional, which is safe
		}
		if n, _ := replicasOf(out); n != theirs {
			return true
		}
	}
	return false
}

// replicasOf is obj's spec.replicas, a whole number as JSON decoding or a Lua round trip gives it.
func replicasOf(obj *unstructured.Unstructured) (int64, bool) {
	v, ok, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "replicas")
	switch n := v.(type) {
	case int64:
		return n, ok
	case float64:
		return int64(n), ok && n == float64(int64(n))
	}
	return 0, false
}

// changedWhileAppliedTries is how many times a pass applies a manifest whose member object keeps changing between
// the read and the apply; then the Work is retried with backoff.
const changedWhileAppliedTries = 3

// changedWhileAppliedError is an apply refused because the member object changed since it was read for Retain:
// it is read, retained and applied again.
type changedWhileAppliedError struct {
	ref workrecord.Ref
	err error
}

func (e *changedWhileAppliedError) Error() string {
	return fmt.Sprintf("applying %s: it changed in the member while it was applied, %d times in a row: %v", e.ref, changedWhileAppliedTries, e.err)
}

func (e *changedWhileAppliedError) Unwrap() error { return e.err }

func ensureNamespace(ctx context.Context, mc *member.Client, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	_, err := mc.Kubernetes.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{FieldManager: names.FieldManager})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func (r *Reconciler) retain(ctx context.Context, desired, observed *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if r.Retainer == nil {
		return desired, nil
	}
	out, err := r.Retainer.Retain(ctx, desired, observed)
	if errors.Is(err, interpreter.ErrUnsupported) {
		return desired, nil
	}
	return out, err
}

// resourceFor maps obj's kind to its resource in the member and returns the client of obj's resource, setting
// obj's namespace to workNamespace when the manifest leaves it to the Work (or clearing it for a cluster-scoped
// kind).
func resourceFor(mc *member.Client, obj *unstructured.Unstructured, workNamespace string) (dynamic.ResourceInterface, error) {
	gvk := obj.GroupVersionKind()
	mapping, err := mc.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	return resourceOf(mc, mapping, obj, workNamespace)
}

// resourceOf is the client of mapping's resource for obj, setting obj's namespace as resourceFor says. An object
// outside the Work's scope (rendering.InWorkScope) is an *outOfScopeError: the binding stage renders none, and one
// in a Work all the same (written by hand, or rendered before that check) is never touched.
func resourceOf(mc *member.Client, mapping *meta.RESTMapping, obj *unstructured.Unstructured, workNamespace string) (dynamic.ResourceInterface, error) {
	namespaced := mapping.Scope.Name() == meta.RESTScopeNameNamespace
	if err := rendering.InWorkScope(workNamespace, namespaced, obj.GetNamespace()); err != nil {
		return nil, &outOfScopeError{ref: workrecord.RefOf(obj), err: err}
	}
	if !namespaced {
		obj.SetNamespace("")
		return mc.Dynamic.Resource(mapping.Resource), nil
	}
	if obj.GetNamespace() == "" {
		obj.SetNamespace(workNamespace)
	}
	return mc.Dynamic.Resource(mapping.Resource).Namespace(obj.GetNamespace()), nil
}

// outOfScopeError is an object a Work may not hold: of another namespace, or cluster-scoped in a Work of a
// namespace.
type outOfScopeError struct {
	ref workrecord.Ref
	err error
}

func (e *outOfScopeError) Error() string { return fmt.Sprintf("%s: not applied: %v", e.ref, e.err) }

// resourceForRef is resourceFor for an object to remove, in any version the member serves of its kind: the object
// is the one in each, and the version named may be one the member no longer serves (a CRD's old version dropped).
// A NoMatch error then means the member serves the kind in no version (member.Client.RESTMapping says when that is
// not known: its discovery of the kind's group failed).
func resourceForRef(mc *member.Client, ref workrecord.Ref, workNamespace string) (dynamic.ResourceInterface, error) {
	obj := &unstructured.Unstructured{}
	gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
	obj.SetGroupVersionKind(gvk)
	obj.SetNamespace(ref.Namespace)
	obj.SetName(ref.Name)
	mapping, err := mc.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		mapping, err = mc.RESTMapping(gvk.GroupKind())
	}
	if err != nil {
		return nil, err
	}
	return resourceOf(mc, mapping, obj, workNamespace)
}
