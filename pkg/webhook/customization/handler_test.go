package customization

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/fedmesh/fedmesh/pkg/apis"
	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
)

func scheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	if err := apis.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// ric is a customization of apps.kruise.io/v1alpha1 CloneSet with a health script, and a status script if given.
func ric(name, health, status string) *configv1alpha1.ResourceInterpreterCustomization {
	c := &configv1alpha1.ResourceInterpreterCustomization{
		TypeMeta:   metav1.TypeMeta{APIVersion: "config.fedmesh.io/v1alpha1", Kind: "ResourceInterpreterCustomization"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
	}
	c.Spec.Target = configv1alpha1.CustomizationTarget{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet"}
	if health != "" {
		c.Spec.Customizations.HealthInterpretation = &configv1alpha1.HealthInterpretation{LuaScript: health}
	}
	if status != "" {
		c.Spec.Customizations.StatusReflection = &configv1alpha1.StatusReflection{LuaScript: status}
	}
	return c
}

func request(t *testing.T, op admissionv1.Operation, c *configv1alpha1.ResourceInterpreterCustomization) admission.Request {
	raw, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{UID: "1", Operation: op, Name: c.Name,
		Object: runtime.RawExtension{Raw: raw}}}
	if op == admissionv1.Delete {
		req.Object, req.OldObject = runtime.RawExtension{}, runtime.RawExtension{Raw: raw}
	}
	return req
}

const (
	healthOK = "function InterpretHealth(obj)\n  return obj.status ~= nil\nend"
	statusOK = "function ReflectStatus(obj) return obj.status end"
)

func TestHandler(t *testing.T) {
	existing := ric("cloneset-health", healthOK, "")
	tests := []struct {
		name    string
		op      admissionv1.Operation
		obj     *configv1alpha1.ResourceInterpreterCustomization
		allowed bool
		reason  string // part of the denial
	}{
		{"a new kind's scripts", admissionv1.Create, func() *configv1alpha1.ResourceInterpreterCustomization {
			c := ric("workflow", healthOK, statusOK)
			c.Spec.Target.Kind = "Workflow"
			return c
		}(), true, ""},
		{"another operation of the same kind", admissionv1.Create, ric("cloneset-status", "", statusOK), true, ""},
		{"a syntax error, with its line", admissionv1.Create, ric("bad", "function InterpretHealth(obj)\n  return obj.status ~=\nend", ""),
			false, "bad:healthInterpretation line:3(column:3) near 'end': syntax error"},
		{"a script that does not define its function", admissionv1.Create, ric("misnamed", "function Health(obj) return true end", ""),
			false, "misnamed:healthInterpretation: the script does not define function InterpretHealth"},
		{"a runtime error at load, with its line", admissionv1.Create, ric("boom", "local x = nil\nlocal y = x.field\nfunction InterpretHealth(o) return true end", ""),
			false, "boom:healthInterpretation:2: attempt to index a non-table object(nil) with key 'field'"},
		{"a second script for the same operation", admissionv1.Create, ric("cloneset-health-2", healthOK, statusOK),
			false, `InterpretHealth (healthInterpretation) for apps.kruise.io/v1alpha1, CloneSet is already defined by customization "cloneset-health"`},
		{"no script at all", admissionv1.Create, ric("empty", "", ""), false, "defines no script"},
		{"a delete", admissionv1.Delete, ric("cloneset-health", healthOK, ""), true, ""},
	}
	s := scheme(t)
	h := &Handler{Reader: fake.NewClientBuilder().WithScheme(s).WithObjects(existing).Build(), Decoder: admission.NewDecoder(s)}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := h.Handle(context.Background(), request(t, tt.op, tt.obj))
			if resp.Allowed != tt.allowed {
				t.Fatalf("allowed = %v (%+v), want %v", resp.Allowed, resp.Result, tt.allowed)
			}
			if !tt.allowed {
				if resp.Result == nil || resp.Result.Code != http.StatusForbidden || !strings.Contains(resp.Result.Message, tt.reason) {
					t.Fatalf("result %+v, want a denial containing %q", resp.Result, tt.reason)
				}
			}
		})
	}
}

// failingReader fails every List, as an API server that cannot be reached.
type failingReader struct{ client.Reader }

func (failingReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("connection refused")
}

func TestHandlerErrors(t *testing.T) {
	s := scheme(t)
	h := &Handler{Reader: failingReader{}, Decoder: admission.NewDecoder(s)}
	resp := h.Handle(context.Background(), request(t, admissionv1.Create, ric("ok", healthOK, "")))
	if resp.Allowed || resp.Result.Code != http.StatusInternalServerError || !strings.Contains(resp.Result.Message, "connection refused") {
		t.Fatalf("list failure: %+v", resp.Result)
	}
	bad := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create,
		Object: runtime.RawExtension{Raw: []byte("{not json")}}}
	if resp := h.Handle(context.Background(), bad); resp.Allowed || resp.Result.Code != http.StatusBadRequest {
		t.Fatalf("undecodable object: %+v", resp.Result)
	}
}

// update is the request that changes old to c.
func update(t *testing.T, old, c *configv1alpha1.ResourceInterpreterCustomization) admission.Request {
	req := request(t, admissionv1.Update, c)
	raw, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	req.OldObject = runtime.RawExtension{Raw: raw}
	return req
}

// created is c created at t.
func created(c *configv1alpha1.ResourceInterpreterCustomization, t time.Time) *configv1alpha1.ResourceInterpreterCustomization {
	c.CreationTimestamp = metav1.NewTime(t)
	return c
}

// Customizations can be invalid or conflicting already, admitted while the webhook was unreachable (the chart
// registers it with failurePolicy Ignore). Their updates that change no spec pass, and so do edits of the one the
// federator serves; edits of the others are judged against the ones the federator takes before them.
func TestHandlerUpdates(t *testing.T) {
	hour := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	const healthFixed = "function InterpretHealth(obj)\n  return obj.status ~= nil and obj.status.ready\nend"
	// "older" serves InterpretHealth of CloneSets; "newer" defines it too, and the federator refuses it.
	older := created(ric("older", healthOK, ""), hour)
	newer := created(ric("newer", healthOK, ""), hour.Add(time.Hour))
	// Created in the same second: the one serving keeps the operation, whatever the names.
	serving := created(ric("serving", healthOK, ""), hour)
	serving.Spec.Target.Kind = "Workflow"
	serving.Status.ServedGeneration = 1
	alsoThen := created(ric("also-then", healthOK, ""), hour)
	alsoThen.Spec.Target.Kind = "Workflow"
	broken := created(ric("broken", "function InterpretHealth(obj)\n  return obj.status ~=\nend", ""), hour)
	broken.Spec.Target.Kind = "Rollout"

	edit := func(c *configv1alpha1.ResourceInterpreterCustomization, change func(*configv1alpha1.ResourceInterpreterCustomization)) *configv1alpha1.ResourceInterpreterCustomization {
		c = c.DeepCopy()
		change(c)
		return c
	}
	fixScript := func(c *configv1alpha1.ResourceInterpreterCustomization) {
		c.Spec.Customizations.HealthInterpretation.LuaScript = healthFixed
	}
	deleting := edit(newer, func(c *configv1alpha1.ResourceInterpreterCustomization) {
		c.Finalizers = []string{metav1.FinalizerDeleteDependents}
		c.DeletionTimestamp = &metav1.Time{Time: hour.Add(2 * time.Hour)}
	})
	for _, tc := range []struct {
		name   string
		old, c *configv1alpha1.ResourceInterpreterCustomization
		reason string // part of the denial; "" when allowed
	}{
		{"a fix of the script that serves", older, edit(older, fixScript), ""},
		{"an edit of the newer one, conflicting still", newer, edit(newer, fixScript),
			`InterpretHealth (healthInterpretation) for apps.kruise.io/v1alpha1, CloneSet is already defined by customization "older"`},
		{"the newer one made to conflict no more", newer, edit(newer, func(c *configv1alpha1.ResourceInterpreterCustomization) {
			c.Spec.Customizations.HealthInterpretation = nil
			c.Spec.Customizations.StatusReflection = &configv1alpha1.StatusReflection{LuaScript: statusOK}
		}), ""},
		// The garbage collector's last step of a foreground deletion: refused, the customization would stay.
		{"its finalizer removed while it is deleted", deleting, edit(deleting, func(c *configv1alpha1.ResourceInterpreterCustomization) {
			c.Finalizers = nil
		}), ""},
		{"a label on the newer one", newer, edit(newer, func(c *configv1alpha1.ResourceInterpreterCustomization) {
			c.Labels = map[string]string{"team": "apps"}
		}), ""},
		{"a label on one that does not compile", broken, edit(broken, func(c *configv1alpha1.ResourceInterpreterCustomization) {
			c.Labels = map[string]string{"team": "apps"}
		}), ""},
		{"an edit of one that does not compile, still not compiling", broken, edit(broken, func(c *configv1alpha1.ResourceInterpreterCustomization) {
			c.Spec.Customizations.HealthInterpretation.LuaScript += "\n"
		}), "syntax error"},
		{"of the same second, an edit of the serving one", serving, edit(serving, fixScript), ""},
		{"of the same second, an edit of the other", alsoThen, edit(alsoThen, fixScript), `already defined by customization "serving"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := scheme(t)
			reader := fake.NewClientBuilder().WithScheme(s).
				WithObjects(older.DeepCopy(), newer.DeepCopy(), serving.DeepCopy(), alsoThen.DeepCopy(), broken.DeepCopy()).Build()
			h := &Handler{Reader: reader, Decoder: admission.NewDecoder(s)}
			resp := h.Handle(context.Background(), update(t, tc.old, tc.c))
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
