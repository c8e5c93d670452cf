package execution

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
)

// obj parses a JSON object the way the dynamic client does (integers as int64).
func obj(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(s)); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return u
}

func TestNeedsApply(t *testing.T) {
	const desired = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop",
		"labels":{"app":"web","work.fedmesh.io/managed":"true"}},
		"spec":{"replicas":2,"template":{"metadata":{"creationTimestamp":null,"labels":{"app":"web"}},
		"spec":{"containers":[{"name":"app","image":"app:1","resources":{}}]}}}}`
	// observed is desired as a member holds it: server metadata, defaults, status, another manager's label.
	const observed = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop",
		"uid":"u1","resourceVersion":"9","generation":1,"creationTimestamp":"2024-01-01T00:00:00Z",
		"labels":{"app":"web","work.fedmesh.io/managed":"true","team":"blue"},
		"managedFields":[{"manager":"fedmesh","operation":"Apply","apiVersion":"apps/v1"}]},
		"spec":{"replicas":2,"revisionHistoryLimit":10,"strategy":{"type":"RollingUpdate"},
		"template":{"metadata":{"creationTimestamp":null,"labels":{"app":"web"}},
		"spec":{"containers":[{"name":"app","image":"app:1","resources":{},"imagePullPolicy":"IfNotPresent"}],
		"dnsPolicy":"ClusterFirst"}}},"status":{"replicas":2}}`
	applied := func(status metav1.ConditionStatus, observedGen int64) []metav1.Condition {
		return []metav1.Condition{{Type: workv1alpha1.WorkApplied, Status: status, ObservedGeneration: observedGen, Reason: ReasonApplied}}
	}
	edit := func(s string, f func(u *unstructured.Unstructured)) func(t *testing.T) *unstructured.Unstructured {
		return func(t *testing.T) *unstructured.Unstructured {
			u := obj(t, s)
			if f != nil {
				f(u)
			}
			return u
		}
	}
	set := func(v any, path ...string) func(u *unstructured.Unstructured) {
		return func(u *unstructured.Unstructured) {
			if err := unstructured.SetNestedField(u.Object, v, path...); err != nil {
				panic(err)
			}
		}
	}
	for _, tc := range []struct {
		name       string
		conditions []metav1.Condition
		desired    func(*testing.T) *unstructured.Unstructured
		observed   func(*testing.T) *unstructured.Unstructured // nil: not in the member
		want       bool
		why        string
	}{
		{name: "held and applied at this generation", conditions: applied(metav1.ConditionTrue, 3),
			desired: edit(desired, nil), observed: edit(observed, nil), want: false},
		{name: "server metadata in desired is not compared", conditions: applied(metav1.ConditionTrue, 3),
			desired: edit(desired, func(u *unstructured.Unstructured) {
				u.SetResourceVersion("1")
				u.SetUID("other")
				u.SetGeneration(7)
			}),
			observed: edit(observed, nil), want: false},
		{name: "never applied", desired: edit(desired, nil), observed: edit(observed, nil), want: true,
			why: "the Work is not applied yet"},
		{name: "last apply failed", conditions: applied(metav1.ConditionFalse, 3),
			desired: edit(desired, nil), observed: edit(observed, nil), want: true, why: "the Work is not applied yet"},
		{name: "new generation, even though the member matches", conditions: applied(metav1.ConditionTrue, 2),
			desired: edit(desired, nil), observed: edit(observed, nil), want: true,
			why: "the Work changed since it was applied (generation 3, applied 2)"},
		{name: "not in the member", conditions: applied(metav1.ConditionTrue, 3),
			desired: edit(desired, nil), want: true, why: "not in the member"},
		{name: "being deleted", conditions: applied(metav1.ConditionTrue, 3), desired: edit(desired, nil),
			observed: edit(observed, func(u *unstructured.Unstructured) {
				now := metav1.Now()
				u.SetDeletionTimestamp(&now)
			}),
			want: true, why: "being deleted in the member"},
		{name: "an identical object fedmesh never applied", conditions: applied(metav1.ConditionTrue, 3),
			desired: edit(desired, nil),
			observed: edit(observed, func(u *unstructured.Unstructured) {
				u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply},
					{Manager: names.FieldManager, Operation: metav1.ManagedFieldsOperationUpdate}})
			}),
			want: true, why: "not applied by fedmesh"},
		{name: "image changed in the member", conditions: applied(metav1.ConditionTrue, 3), desired: edit(desired, nil),
			observed: edit(observed, func(u *unstructured.Unstructured) {
				c, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
				c[0].(map[string]any)["image"] = "app:evil"
				set(c, "spec", "template", "spec", "containers")(u)
			}),
			want: true, why: "differs at spec.template.spec.containers[0].image"},
		{name: "label removed in the member", conditions: applied(metav1.ConditionTrue, 3), desired: edit(desired, nil),
			observed: edit(observed, func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"app": "web"}) }),
			want:     true, why: "differs at metadata.labels.work.fedmesh.io/managed"},
		{name: "a container added in the member", conditions: applied(metav1.ConditionTrue, 3), desired: edit(desired, nil),
			observed: edit(observed, func(u *unstructured.Unstructured) {
				c, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
				set(append(c, map[string]any{"name": "sidecar"}), "spec", "template", "spec", "containers")(u)
			}),
			want: true, why: "differs at spec.template.spec.containers"},
		{name: "replicas retained as a float", conditions: applied(metav1.ConditionTrue, 3),
			desired: edit(desired, set(float64(2), "spec", "replicas")), observed: edit(observed, nil), want: false},
		{name: "replicas differ", conditions: applied(metav1.ConditionTrue, 3),
			desired: edit(desired, set(float64(2.5), "spec", "replicas")), observed: edit(observed, nil), want: true,
			why: "differs at spec.replicas"},
		{name: "a string is not a number", conditions: applied(metav1.ConditionTrue, 3),
			desired: edit(desired, set("2", "spec", "replicas")), observed: edit(observed, nil), want: true,
			why: "differs at spec.replicas"},
		{name: "a quantity the server normalized", conditions: applied(metav1.ConditionTrue, 3),
			desired:  edit(desired, set("0.1", "spec", "template", "spec", "cpu")),
			observed: edit(observed, set("100m", "spec", "template", "spec", "cpu")), want: true,
			why: "differs at spec.template.spec.cpu"},
		{name: "an empty map the member does not have", conditions: applied(metav1.ConditionTrue, 3),
			desired:  edit(desired, set(map[string]any{}, "spec", "template", "spec", "securityContext")),
			observed: edit(observed, nil), want: true, why: "differs at spec.template.spec.securityContext"},
		{name: "a null the member does not have", conditions: applied(metav1.ConditionTrue, 3),
			desired: edit(desired, set(nil, "spec", "paused")), observed: edit(observed, nil), want: false},
		{name: "a null where the member has a value", conditions: applied(metav1.ConditionTrue, 3),
			desired:  edit(desired, set(nil, "spec", "revisionHistoryLimit")),
			observed: edit(observed, nil), want: true, why: "differs at spec.revisionHistoryLimit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			work := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Generation: 3},
				Status: workv1alpha1.WorkStatus{Conditions: tc.conditions}}
			var o *unstructured.Unstructured
			if tc.observed != nil {
				o = tc.observed(t)
			}
			d := tc.desired(t)
			before, _ := json.Marshal(d.Object)
			got, why := needsApply(work, meta.FindStatusCondition(tc.conditions, workv1alpha1.WorkApplied), d, o)
			if got != tc.want || why != tc.why {
				t.Errorf("needsApply = %v %q, want %v %q", got, why, tc.want, tc.why)
			}
			if after, _ := json.Marshal(d.Object); string(after) != string(before) {
				t.Errorf("desired changed: %s", after)
			}
		})
	}
}

func TestContains(t *testing.T) {
	for _, tc := range []struct {
		desired, observed any
		want              bool
	}{
		{int64(5), float64(5), true},
		{float64(5), int64(5), true},
		{int64(5), int64(6), false},
		{float64(0.5), float64(0.5), true},
		{int64(1<<53 + 1), float64(1 << 53), false}, // float64(1<<53+1) would round to 1<<53
		{int64(-1 << 63), float64(-1 << 63), true},
		{int64(1<<63 - 1), float64(1 << 63), false}, // out of int64's range
		{1, int64(1), true},
		{json.Number("3"), float64(3), true},
		{"a", "a", true},
		{true, "true", false},
		{true, true, true},
		{nil, nil, true},
		{nil, "x", false},
		{[]any{}, []any{}, true},
		{[]any{}, nil, false},
		{[]any{int64(1)}, []any{int64(1), int64(2)}, false},
		{[]any{map[string]any{"a": "1"}}, []any{map[string]any{"a": "1", "b": "2"}}, true},
		{map[string]any{}, map[string]any{"x": "y"}, true},
		{map[string]any{"a": "1"}, map[string]any{}, false},
		{map[string]any{"a": "1"}, []any{}, false},
		{struct{}{}, struct{}{}, false}, // not a JSON value: uncertain, so different
	} {
		if _, got := contains(tc.desired, tc.observed); got != tc.want {
			t.Errorf("contains(%#v, %#v) = %v, want %v", tc.desired, tc.observed, got, tc.want)
		}
	}
}

// A member's API server counts a DaemonSet's template generation itself, and shows it in an annotation whatever a
// writer sends. A Work that carries another value (rendered before the binding stage stripped it) differs from the
// member's copy on every pass, and is applied again each time, unless the annotation is left to the member.
func TestDaemonSetTemplateGenerationIsTheMembers(t *testing.T) {
	const desired = `{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"agent","namespace":"shop",
		"annotations":{"deprecated.daemonset.template.generation":"1"}},
		"spec":{"template":{"spec":{"containers":[{"name":"a","image":"a:2"}]}}}}`
	const observed = `{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"agent","namespace":"shop",
		"annotations":{"deprecated.daemonset.template.generation":"2"},
		"managedFields":[{"manager":"fedmesh","operation":"Apply","apiVersion":"apps/v1"}]},
		"spec":{"template":{"spec":{"containers":[{"name":"a","image":"a:2"}]}}}}`
	w := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
	applied := &metav1.Condition{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionTrue, ObservedGeneration: 3}
	if need, _ := needsApply(w, applied, obj(t, desired), obj(t, observed)); !need {
		t.Fatal("the member's template generation is not compared: this test no longer shows what LeaveToMember is for")
	}
	left := obj(t, desired)
	native.LeaveToMember(left)
	if need, why := needsApply(w, applied, left, obj(t, observed)); need {
		t.Errorf("applied again on every pass: %s", why)
	}
}
