package overridepolicy

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/fedmesh/fedmesh/pkg/apis"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
)

func plaintext(path, op, value string) policyv1alpha1.OverrideSpec {
	p := policyv1alpha1.PlaintextOverrider{Path: path, Operator: policyv1alpha1.OverriderOperator(op)}
	if value != "" {
		p.Value = &apiextensionsv1.JSON{Raw: []byte(value)}
	}
	return policyv1alpha1.OverrideSpec{OverrideRules: []policyv1alpha1.RuleWithCluster{{Overriders: policyv1alpha1.Overriders{
		Plaintext: []policyv1alpha1.PlaintextOverrider{p}}}}}
}

// policy is an override policy of kind, named p (in namespace tenant when namespaced), with spec.
func policy(kind string, spec policyv1alpha1.OverrideSpec) policyObject {
	if kind == "OverridePolicy" {
		return &policyv1alpha1.OverridePolicy{TypeMeta: metav1.TypeMeta{APIVersion: "policy.fedmesh.io/v1alpha1", Kind: kind},
			ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "p"}, Spec: spec}
	}
	return &policyv1alpha1.ClusterOverridePolicy{TypeMeta: metav1.TypeMeta{APIVersion: "policy.fedmesh.io/v1alpha1", Kind: kind},
		ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: spec}
}

// request is the admission request of op on obj; an update's old object is obj with an empty spec.
func request(t *testing.T, op admissionv1.Operation, kind string, spec policyv1alpha1.OverrideSpec) admission.Request {
	var old policyObject
	if op == admissionv1.Update {
		old = policy(kind, policyv1alpha1.OverrideSpec{})
	}
	return changeRequest(t, op, old, policy(kind, spec))
}

// changeRequest is the admission request of op changing old (nil for none) to obj.
func changeRequest(t *testing.T, op admissionv1.Operation, old, obj policyObject) admission.Request {
	raw := func(o policyObject) runtime.RawExtension {
		if o == nil {
			return runtime.RawExtension{}
		}
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		return runtime.RawExtension{Raw: b}
	}
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{UID: "1", Operation: op,
		Kind:   metav1.GroupVersionKind{Group: "policy.fedmesh.io", Version: "v1alpha1", Kind: kind},
		Object: raw(obj), OldObject: raw(old)}}
}

func TestHandler(t *testing.T) {
	s := runtime.NewScheme()
	if err := apis.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	h := NewWebhook(s).Handler
	for _, tc := range []struct {
		name   string
		op     admissionv1.Operation
		kind   string
		spec   policyv1alpha1.OverrideSpec
		reason string // part of the denial; "" means allowed
	}{
		{"a label", admissionv1.Create, "OverridePolicy", plaintext("/metadata/labels/env", "add", `"prod"`), ""},
		{"the namespace", admissionv1.Create, "OverridePolicy", plaintext("/metadata/namespace", "replace", `"victim"`),
			"overrideRules[0].overriders.plaintext[0]: path /metadata/namespace would change /metadata/namespace: an override may not change an object's apiVersion, kind, name or namespace"},
		{"the kind, on update", admissionv1.Update, "OverridePolicy", plaintext("/kind", "replace", `"ClusterRole"`), "path /kind would change /kind"},
		{"the apiVersion", admissionv1.Create, "OverridePolicy", plaintext("/apiVersion", "replace", `"rbac.authorization.k8s.io/v1"`), "path /apiVersion"},
		{"the name", admissionv1.Create, "OverridePolicy", plaintext("/metadata/name", "replace", `"other"`), "path /metadata/name"},
		{"metadata whole", admissionv1.Create, "OverridePolicy", plaintext("/metadata", "replace", `{"name":"x","namespace":"victim"}`),
			"path /metadata would change /metadata/name and /metadata/namespace"},
		{"a cluster-wide policy moving the namespace", admissionv1.Create, "ClusterOverridePolicy", plaintext("/metadata/namespace", "replace", `"victim"`), "path /metadata/namespace"},
		{"an invalid patch", admissionv1.Create, "ClusterOverridePolicy", plaintext("/spec/replicas", "add", ""), "add of /spec/replicas needs a value"},
		{"a delete is not looked at", admissionv1.Delete, "OverridePolicy", plaintext("/kind", "replace", `"ClusterRole"`), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := h.Handle(context.Background(), request(t, tc.op, tc.kind, tc.spec))
			if tc.reason == "" {
				if !resp.Allowed {
					t.Fatalf("denied: %+v", resp.Result)
				}
				return
			}
			if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusForbidden || !strings.Contains(resp.Result.Message, tc.reason) {
				t.Fatalf("result %+v, want a denial containing %q", resp.Result, tc.reason)
			}
		})
	}
}

// A policy can be invalid already, admitted while the webhook was unreachable (the chart registers it with
// failurePolicy Ignore): its updates that change no spec pass, above all the removal of its finalizer when it is
// deleted in the foreground, and so does any update once it is being deleted.
func TestHandlerUpdates(t *testing.T) {
	s := runtime.NewScheme()
	if err := apis.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	h := NewWebhook(s).Handler
	invalid := plaintext("/metadata/namespace", "replace", `"victim"`)
	edit := func(kind string, change func(policyObject)) policyObject {
		p := policy(kind, invalid)
		change(p)
		return p
	}
	deleting := func(p policyObject) {
		p.SetFinalizers([]string{metav1.FinalizerDeleteDependents})
		p.SetDeletionTimestamp(&metav1.Time{Time: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)})
	}
	for _, tc := range []struct {
		name     string
		old, obj policyObject
		reason   string // part of the denial; "" when allowed
	}{
		{"its finalizer removed while it is deleted", edit("OverridePolicy", deleting), edit("OverridePolicy", func(p policyObject) {
			deleting(p)
			p.SetFinalizers(nil)
		}), ""},
		{"a label", policy("ClusterOverridePolicy", invalid), edit("ClusterOverridePolicy", func(p policyObject) {
			p.SetLabels(map[string]string{"team": "apps"})
		}), ""},
		{"another invalid spec", policy("OverridePolicy", invalid),
			policy("OverridePolicy", plaintext("/metadata/name", "replace", `"other"`)), "path /metadata/name"},
		{"made valid", policy("OverridePolicy", invalid), policy("OverridePolicy", plaintext("/metadata/labels/env", "add", `"prod"`)), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := h.Handle(context.Background(), changeRequest(t, admissionv1.Update, tc.old, tc.obj))
			if tc.reason == "" {
				if !resp.Allowed {
					t.Fatalf("denied: %+v", resp.Result)
				}
				return
			}
			if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusForbidden || !strings.Contains(resp.Result.Message, tc.reason) {
				t.Fatalf("result %+v, want a denial containing %q", resp.Result, tc.reason)
			}
		})
	}
}
