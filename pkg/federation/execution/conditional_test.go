package execution

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/declarative"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
	"github.com/fedmesh/fedmesh/pkg/federation/member"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/verdicts"
)

// removing leaves spec.paused to the member by not sending it, as a user's customization may: it puts none of the
// member's values in.
type removing struct{}

func (removing) Retain(_ context.Context, desired, _ *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	out := desired.DeepCopy()
	unstructured.RemoveNestedField(out.Object, "spec", "paused")
	return out, nil
}

// An apply is conditional on the member object being as read exactly when it carries values read from it: applied
// over a newer write of them (an HPA scaling in between), those would put the old ones back. Without them, a
// conditional apply only meets the member's controllers' writes (a rolling Deployment's status) as conflicts.
func TestApplyConditionalOnlyWithTheMembersValues(t *testing.T) {
	lua := luaRetain(t, `
function Retain(desiredObj, observedObj)
  if observedObj.metadata.labels ~= nil and observedObj.metadata.labels.hpa == "true" then
    desiredObj.spec.replicas = observedObj.spec.replicas
  end
  return desiredObj
end`)
	capped := luaRetain(t, `
function Retain(desiredObj, observedObj)
  desiredObj.spec.replicas = math.min(observedObj.spec.replicas, 2)
  return desiredObj
end`)
	retainReplicas := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop",
		"labels":{"` + interpreter.RetainReplicasLabel + `":"true"}},"spec":{"replicas":2,"template":{"spec":{"containers":[{"name":"c","image":"web:v2"}]}}}}`
	for _, tc := range []struct {
		name        string
		retainer    Retainer
		manifest    string
		hpa         bool // the member object carries the label the Lua Retain copies replicas on
		conditional bool
	}{{
		name:     "the member's replicas, as the label asks, equal to the Work's",
		retainer: native.New(), manifest: retainReplicas, conditional: true,
	}, {
		name:     "the label on a kind whose Retain takes nothing",
		retainer: native.New(), conditional: false,
		manifest: strings.NewReplacer(`"Deployment"`, `"StatefulSet"`).Replace(retainReplicas),
	}, {
		name:     "a Lua Retain copying the member's replicas, equal to the Work's",
		retainer: lua, hpa: true, conditional: true,
		manifest: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop"},
			"spec":{"replicas":2,"template":{"spec":{"containers":[{"name":"c","image":"web:v2"}]}}}}`,
	}, {
		name:     "a Lua Retain copying the member's replicas within a bound, at the bound",
		retainer: capped, conditional: true,
		manifest: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop"},"spec":{"replicas":2}}`,
	}, {
		name:     "a Retain that only removes a field",
		retainer: removing{},
		manifest: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop"},"spec":{"replicas":3,"paused":true}}`,
	}, {
		name:     "a Lua Retain that keeps nothing, of a manifest with nulls the round trip drops",
		retainer: lua,
		manifest: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop"},
			"spec":{"replicas":3,"template":{"metadata":{"creationTimestamp":null},"spec":{"containers":[{"name":"c","image":"web:v2"}]}}}}`,
	}, {
		name:     "revision annotations the Work carries, left to the member",
		retainer: native.New(),
		manifest: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop",
			"annotations":{"deployment.kubernetes.io/revision":"3"}},"spec":{"replicas":3}}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			m := workv1alpha1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(tc.manifest)}}
			kind := obj(t, tc.manifest).GetKind()
			gvk := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: kind}
			observed := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "apps/v1", "kind": kind,
				"metadata": map[string]any{"name": "web", "namespace": "shop", "resourceVersion": "7",
					"annotations": map[string]any{"deployment.kubernetes.io/revision": "5"}},
				"spec": map[string]any{"replicas": int64(2)},
			}}
			if tc.hpa {
				observed.SetLabels(map[string]string{"hpa": "true"})
			}
			dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), observed)
			var sent map[string]any
			dyn.PrependReactor("patch", strings.ToLower(kind)+"s", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if err := json.Unmarshal(a.(k8stesting.PatchAction).GetPatch(), &sent); err != nil {
					t.Fatal(err)
				}
				return true, observed.DeepCopy(), nil
			})
			mapper := &lookingAgain{RESTMapper: serving(gvk), before: []schema.GroupVersionKind{gvk}, after: []schema.GroupVersionKind{gvk}}
			mc := &member.Client{Name: "member1", Mapper: mapper, Dynamic: dyn}
			r := &Reconciler{Retainer: tc.retainer, Verdicts: &verdicts.Store{Type: workv1alpha1.WorkApplied}}
			w := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "shop"}, Spec: workv1alpha1.WorkSpec{ClusterName: "member1"}}
			if _, _, err := r.applyManifest(context.Background(), mc, w, 0, m, policyv1alpha1.ConflictOverwrite, finishedState{}); err != nil {
				t.Fatal(err)
			}
			if sent == nil {
				t.Fatal("nothing applied")
			}
			rv, _, _ := unstructured.NestedString(sent, "metadata", "resourceVersion")
			if got := rv == "7"; got != tc.conditional {
				t.Errorf("apply conditional %v (resourceVersion %q), want %v", got, rv, tc.conditional)
			}
		})
	}
}

// luaRetain is the interpreter chain with a customization of Deployments' Retain by script.
func luaRetain(t *testing.T, script string) Retainer {
	t.Helper()
	lua, err := declarative.New([]configv1alpha1.ResourceInterpreterCustomization{{ObjectMeta: metav1.ObjectMeta{Name: "deploy"},
		Spec: configv1alpha1.ResourceInterpreterCustomizationSpec{
			Target:         configv1alpha1.CustomizationTarget{APIVersion: "apps/v1", Kind: "Deployment"},
			Customizations: configv1alpha1.CustomizationRules{Retention: &configv1alpha1.LocalValueRetention{LuaScript: script}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return interpreter.Layers{Customization: lua, Native: native.New()}.Chain()
}

// countingRetain keeps nothing, and counts its calls.
type countingRetain struct{ calls int }

func (c *countingRetain) Retain(_ context.Context, desired, _ *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	c.calls++
	return desired.DeepCopy(), nil
}

// A pass that applies nothing asks Retain once: whether an apply would carry the member's values is asked only of
// one that is sent (a Retain webhook is called again to tell).
func TestSkippedPassAsksRetainOnce(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	mapper := &lookingAgain{RESTMapper: serving(gvk), before: []schema.GroupVersionKind{gvk}, after: []schema.GroupVersionKind{gvk}}
	w := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "shop"}, Spec: workv1alpha1.WorkSpec{ClusterName: "member1"}}
	m := workv1alpha1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop"},"spec":{"replicas":2}}`)}}
	// pass applies m over observed and returns what it sent (nil for nothing) and how often it asked Retain.
	pass := func(observed *unstructured.Unstructured) (map[string]any, int) {
		dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), observed)
		var sent map[string]any
		dyn.PrependReactor("patch", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if err := json.Unmarshal(a.(k8stesting.PatchAction).GetPatch(), &sent); err != nil {
				t.Fatal(err)
			}
			return true, observed.DeepCopy(), nil
		})
		retain := &countingRetain{}
		r := &Reconciler{Retainer: retain, Verdicts: &verdicts.Store{Type: workv1alpha1.WorkApplied}}
		if _, _, err := r.applyManifest(context.Background(), &member.Client{Name: "member1", Mapper: mapper, Dynamic: dyn}, w, 0, m,
			policyv1alpha1.ConflictOverwrite, finishedState{}); err != nil {
			t.Fatal(err)
		}
		return sent, retain.calls
	}
	first, _ := pass(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop", "resourceVersion": "6"}, "spec": map[string]any{"replicas": int64(3)}}})
	if first == nil {
		t.Fatal("the first pass applied nothing")
	}
	applied := &unstructured.Unstructured{Object: first}
	applied.SetResourceVersion("7")
	applied.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: names.FieldManager, Operation: metav1.ManagedFieldsOperationApply}})
	w.Status.Conditions = []metav1.Condition{{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionTrue, Reason: ReasonApplied}}
	sent, calls := pass(applied)
	if sent != nil {
		t.Fatal("applied again: the member object is as desired, the pass should apply nothing")
	}
	if calls != 1 {
		t.Errorf("Retain called %d times on a pass that applies nothing, want 1", calls)
	}
}
