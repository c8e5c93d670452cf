package execution

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/event"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/member"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/workrecord"
)

func TestDecodeManifest(t *testing.T) {
	raw := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop","uid":"u1",
		"resourceVersion":"7","generation":3,"labels":{"app":"web"},"ownerReferences":[{"apiVersion":"v1","kind":"X","name":"x","uid":"o"}],
		"managedFields":[{"manager":"kubectl"}]},"spec":{"replicas":2,"template":{"metadata":{"labels":{"app":"web"}}}},
		"status":{"readyReplicas":2}}`
	obj, err := decodeManifest(0, workv1alpha1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(raw)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"uid", "resourceVersion", "generation", "ownerReferences", "managedFields"} {
		if _, ok := obj.Object["metadata"].(map[string]any)[f]; ok {
			t.Errorf("metadata.%s kept", f)
		}
	}
	if _, ok := obj.Object["status"]; ok {
		t.Error("status kept")
	}
	if obj.GetLabels()["app"] != "web" || obj.GetNamespace() != "shop" {
		t.Errorf("user metadata lost: %v", obj.Object["metadata"])
	}

	for _, tc := range []struct {
		name string
		m    workv1alpha1.Manifest
	}{
		{"empty", workv1alpha1.Manifest{}},
		{"not json", workv1alpha1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte("{")}}},
		{"no name", workv1alpha1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap"}`)}}},
	} {
		_, err := decodeManifest(3, tc.m)
		if reason(err) != ReasonInvalidManifest || !strings.Contains(err.Error(), "manifest 3") {
			t.Errorf("%s: got %v (%s)", tc.name, err, reason(err))
		}
	}
}

func TestSetIdentityLeavesPodTemplate(t *testing.T) {
	obj := deployment("web", nil, nil)
	work := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-deployment-member1"}}
	setIdentity(obj, work)
	want := map[string]string{"app": "web", names.ManagedLabel: "true", names.WorkNamespaceLabel: "shop",
		names.WorkNameLabel: "web-deployment-member1"}
	if fmt.Sprint(obj.GetLabels()) != fmt.Sprint(want) {
		t.Errorf("labels %v, want %v", obj.GetLabels(), want)
	}
	tpl, _, _ := unstructured.NestedStringMap(obj.Object, "spec", "template", "metadata", "labels")
	if len(tpl) != 1 || tpl["app"] != "web" {
		t.Errorf("pod template labels changed: %v", tpl)
	}
	if !belongsTo(obj, work) || belongsTo(obj, &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "other"}}) {
		t.Error("belongsTo wrong")
	}
}

// TestIdentityOfLongWorkNames marks member objects as Works whose names are too long for a label value: the
// member must accept the labels, and the object must still be known as the Work's (to delete it, to hand it over).
func TestIdentityOfLongWorkNames(t *testing.T) {
	for _, name := range []string{
		"checkout-frontend-canary-v2-deployment-member-eu-west-1-production", // 66 characters
		names.Work(strings.Repeat("checkout-", 27), "member-eu-west-1-production"),
	} {
		obj := deployment("web", nil, nil)
		obj.SetAnnotations(map[string]string{"team": "checkout"})
		work := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}}
		setIdentity(obj, work)
		for k, v := range obj.GetLabels() {
			if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
				t.Errorf("%d characters: label %s=%q: %v", len(name), k, v, errs)
			}
		}
		if a := obj.GetAnnotations(); a[names.WorkNameAnnotation] != name || a["team"] != "checkout" {
			t.Errorf("%d characters: annotations %v", len(name), a)
		}
		other := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name[:len(name)-1] + "x"}}
		if !belongsTo(obj, work) || belongsTo(obj, other) {
			t.Errorf("%d characters: belongsTo wrong", len(name))
		}
	}
}

// TestHandoverPatch hands a member object between Works with long and short names: the whole name goes with a
// long one, and a short one's handover removes the whole name the previous Work left.
func TestHandoverPatch(t *testing.T) {
	long := "checkout-frontend-canary-v2-deployment-member-eu-west-1-production"
	for _, tc := range []struct {
		to   string
		want string
	}{
		{long, `{"metadata":{"annotations":{"work.fedmesh.io/work-name":"` + long + `"},"labels":{"work.fedmesh.io/work-name":"` + names.LabelValue(long) + `"}}}`},
		{"web-member1", `{"metadata":{"annotations":{"work.fedmesh.io/work-name":null},"labels":{"work.fedmesh.io/work-name":"web-member1"}}}`},
	} {
		if got := string(handoverPatch(tc.to)); got != tc.want {
			t.Errorf("handover to %s: %s, want %s", tc.to, got, tc.want)
		}
	}
}

func TestCheckConflict(t *testing.T) {
	foreign := deployment("web", nil, []metav1.ManagedFieldsEntry{{Manager: "kubectl-create"}, {Manager: "kube-controller-manager"}})
	labelled := deployment("web", map[string]string{names.ManagedLabel: "true"}, nil)
	managed := deployment("web", nil, []metav1.ManagedFieldsEntry{{Manager: names.FieldManager}})
	for _, tc := range []struct {
		name       string
		observed   *unstructured.Unstructured
		resolution policyv1alpha1.ConflictResolution
		conflict   bool
	}{
		{"absent", nil, policyv1alpha1.ConflictAbort, false},
		{"foreign, abort", foreign, policyv1alpha1.ConflictAbort, true},
		{"foreign, unset means abort", foreign, "", true},
		{"foreign, overwrite", foreign, policyv1alpha1.ConflictOverwrite, false},
		{"our label", labelled, policyv1alpha1.ConflictAbort, false},
		{"our field manager", managed, policyv1alpha1.ConflictAbort, false},
	} {
		err := checkConflict(tc.observed, "member1", tc.resolution)
		if (err != nil) != tc.conflict {
			t.Errorf("%s: conflict %v, want %v", tc.name, err, tc.conflict)
			continue
		}
		if err == nil {
			continue
		}
		msg := err.Error()
		for _, want := range []string{"Deployment shop/web", "member1", "not created by fedmesh", "kubectl-create", "Overwrite"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: message %q lacks %q", tc.name, msg, want)
			}
		}
		if reason(err) != ReasonConflictAbort || retryable(err) {
			t.Errorf("%s: reason %s retryable %v", tc.name, reason(err), retryable(err))
		}
	}
}

func TestReason(t *testing.T) {
	gr := schema.GroupResource{Group: "apps", Resource: "deployments"}
	for _, tc := range []struct {
		err       error
		reason    string
		retryable bool
	}{
		{nil, ReasonApplied, false},
		{fmt.Errorf("applying x: %w", apierrors.NewInvalid(schema.GroupKind{Kind: "Deployment"}, "web", nil)), ReasonApplyFailed, true},
		{fmt.Errorf("reading x: %w", &url.Error{Op: "Get", URL: "https://127.0.0.1:1", Err: errors.New("connection refused")}), ReasonClusterUnreachable, true},
		{unreachable(apierrors.NewNotFound(gr, "member3")), ReasonClusterUnreachable, true},
		{&meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "x.io", Kind: "Thing"}}, ReasonUnknownKind, true},
		// The member's discovery of the kind's API failed (a 503 of an unavailable aggregated API): it does not
		// answer for that API, which says nothing of whether it serves the kind.
		{fmt.Errorf("Thing t: %w", &member.DiscoveryFailedError{Cluster: "member1", Kind: schema.GroupKind{Group: "x.io", Kind: "Thing"},
			GroupVersion: schema.GroupVersion{Group: "x.io", Version: "v1"}, Err: apierrors.NewServiceUnavailable("service unavailable")}),
			ReasonClusterUnreachable, true},
		{&invalidManifestError{err: errors.New("bad")}, ReasonInvalidManifest, false},
		// Not tried: the Cluster turning Ready brings the Work back, not a backoff.
		{&notReadyError{cluster: "member1", reason: "ClusterNotReachable"}, ReasonClusterNotReady, false},
	} {
		if got := reason(tc.err); got != tc.reason || retryable(tc.err) != tc.retryable {
			t.Errorf("%v: reason %s retryable %v, want %s %v", tc.err, got, retryable(tc.err), tc.reason, tc.retryable)
		}
	}
}

func TestAppliedCondition(t *testing.T) {
	ok := appliedCondition([]error{nil, nil}, 4)
	if ok.Status != metav1.ConditionTrue || ok.Reason != ReasonApplied || ok.ObservedGeneration != 4 {
		t.Errorf("all applied: %+v", ok)
	}
	conflict := &conflictError{ref: workrecord.Ref{Kind: "Deployment", Namespace: "shop", Name: "web"}, cluster: "member1"}
	bad := appliedCondition([]error{nil, conflict, errors.New("dial tcp: connection refused")}, 4)
	if bad.Status != metav1.ConditionFalse || bad.Reason != ReasonConflictAbort ||
		!strings.Contains(bad.Message, "shop/web") || !strings.Contains(bad.Message, "connection refused") {
		t.Errorf("failures: %+v", bad)
	}
}

func deployment(name string, labels map[string]string, managed []metav1.ManagedFieldsEntry) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": "shop", "labels": map[string]any{"app": name}},
		"spec":     map[string]any{"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": name}}}},
	}}
	l := obj.GetLabels()
	for k, v := range labels {
		l[k] = v
	}
	obj.SetLabels(l)
	obj.SetManagedFields(managed)
	return obj
}

// TestMissingInMember: a status update of an applied Work that does not list one of its objects is applied again,
// whether the status listed it before (deleted in the member) or never did (deleted before the work-status stage
// saw it).
func TestMissingInMember(t *testing.T) {
	listed := func(ordinals ...int32) []workv1alpha1.ManifestStatus {
		var out []workv1alpha1.ManifestStatus
		for _, o := range ordinals {
			out = append(out, workv1alpha1.ManifestStatus{Identifier: workv1alpha1.ResourceIdentifier{Ordinal: o}, Health: workv1alpha1.ResourceHealthy})
		}
		return out
	}
	applied := func(status metav1.ConditionStatus, generation int64) []metav1.Condition {
		return []metav1.Condition{{Type: workv1alpha1.WorkApplied, Status: status, ObservedGeneration: generation, Reason: ReasonApplied}}
	}
	unknown := listed(0, 1)
	unknown[1].Health = workv1alpha1.ResourceUnknown
	for _, tc := range []struct {
		name       string
		conditions []metav1.Condition
		statuses   []workv1alpha1.ManifestStatus
		want       bool
	}{
		{"every object listed", applied(metav1.ConditionTrue, 2), listed(1, 0), false},
		{"one not listed", applied(metav1.ConditionTrue, 2), listed(0), true},
		{"none listed yet", applied(metav1.ConditionTrue, 2), nil, true},
		{"one listed but not known (its watch has not synced)", applied(metav1.ConditionTrue, 2), unknown, false},
		{"not applied: retried anyway", applied(metav1.ConditionFalse, 2), listed(0), false},
		{"applied at an earlier generation: applied anyway", applied(metav1.ConditionTrue, 1), listed(0), false},
		{"never applied", nil, nil, false},
	} {
		w := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-member1", Generation: 2}}
		w.Spec.Workload.Manifests = make([]workv1alpha1.Manifest, 2)
		w.Status = workv1alpha1.WorkStatus{Conditions: tc.conditions, ManifestStatuses: tc.statuses}
		if got := objectMissing.Update(event.UpdateEvent{ObjectOld: w, ObjectNew: w}); got != tc.want {
			t.Errorf("%s: passed %v, want %v", tc.name, got, tc.want)
		}
	}
}
