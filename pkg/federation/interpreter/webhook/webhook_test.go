package webhook

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
)

var widgetGVK = schema.GroupVersionKind{Group: "example.io", Version: "v1", Kind: "Widget"}

func widget() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(widgetGVK)
	u.SetName("w")
	u.SetNamespace("shop")
	return u
}

func TestMatches(t *testing.T) {
	rule := func(ops []configv1alpha1.InterpreterOperation, groups, versions, kinds []string) configv1alpha1.RuleWithOperations {
		return configv1alpha1.RuleWithOperations{Operations: ops, Rule: configv1alpha1.Rule{APIGroups: groups, APIVersions: versions, Kinds: kinds}}
	}
	health := []configv1alpha1.InterpreterOperation{interpreter.InterpretHealth}
	all := []configv1alpha1.InterpreterOperation{configv1alpha1.InterpreterOperationAll}
	tests := []struct {
		name  string
		rules []configv1alpha1.RuleWithOperations
		gvk   schema.GroupVersionKind
		op    interpreter.Operation
		want  bool
	}{
		{"exact", []configv1alpha1.RuleWithOperations{rule(health, []string{"example.io"}, []string{"v1"}, []string{"Widget"})}, widgetGVK, interpreter.InterpretHealth, true},
		{"other operation", []configv1alpha1.RuleWithOperations{rule(health, []string{"example.io"}, []string{"v1"}, []string{"Widget"})}, widgetGVK, interpreter.Retain, false},
		{"all operations", []configv1alpha1.RuleWithOperations{rule(all, []string{"example.io"}, []string{"v1"}, []string{"Widget"})}, widgetGVK, interpreter.Retain, true},
		{"other version", []configv1alpha1.RuleWithOperations{rule(all, []string{"example.io"}, []string{"v2"}, []string{"Widget"})}, widgetGVK, interpreter.Retain, false},
		{"wildcards", []configv1alpha1.RuleWithOperations{rule(all, []string{"*"}, []string{"*"}, []string{"*"})}, widgetGVK, interpreter.InterpretReplica, true},
		{"core group is empty", []configv1alpha1.RuleWithOperations{rule(all, []string{""}, []string{"v1"}, []string{"Pod"})}, schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, interpreter.InterpretHealth, true},
		{"any rule", []configv1alpha1.RuleWithOperations{
			rule(health, []string{"apps"}, []string{"v1"}, []string{"Deployment"}),
			rule(health, []string{"example.io"}, []string{"v1"}, []string{"Widget"})}, widgetGVK, interpreter.InterpretHealth, true},
		{"no rules", nil, widgetGVK, interpreter.InterpretHealth, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Matches(tt.rules, tt.gvk, tt.op); got != tt.want {
				t.Fatalf("Matches = %v, want %v", got, tt.want)
			}
		})
	}
}

// answering is a webhook server whose answer to a request is what answer returns (nil: a 500).
func answering(t *testing.T, answer func(*ResourceInterpreterRequest) *ResourceInterpreterResponse) (url string, ca []byte) {
	t.Helper()
	return answeringAs(t, contextTypeMeta(), answer)
}

// answeringAs is answering with the TypeMeta tm on its answers.
func answeringAs(t *testing.T, tm metav1.TypeMeta, answer func(*ResourceInterpreterRequest) *ResourceInterpreterResponse) (url string, ca []byte) {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review ResourceInterpreterContext
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil ||
			review.APIVersion != ContextAPIVersion || review.Kind != ContextKind {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		resp := answer(review.Request)
		if resp == nil {
			http.Error(w, "internal trouble", http.StatusInternalServerError)
			return
		}
		_ = json.NewEncoder(w).Encode(&ResourceInterpreterContext{TypeMeta: tm, Response: resp})
	}))
	t.Cleanup(srv.Close)
	return srv.URL, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

func config(name, url string, ca []byte, ops ...configv1alpha1.InterpreterOperation) configv1alpha1.ResourceInterpreterWebhookConfiguration {
	c := configv1alpha1.ResourceInterpreterWebhookConfiguration{}
	c.Name = name
	c.Webhooks = []configv1alpha1.ResourceInterpreterWebhook{{
		Name:                       name + ".example.io",
		ClientConfig:               admissionregistrationv1.WebhookClientConfig{URL: ptr.To(url), CABundle: ca},
		Rules:                      []configv1alpha1.RuleWithOperations{{Operations: ops, Rule: configv1alpha1.Rule{APIGroups: []string{"example.io"}, APIVersions: []string{"v1"}, Kinds: []string{"Widget"}}}},
		TimeoutSeconds:             ptr.To[int32](1),
		InterpreterContextVersions: []string{ContextVersion},
	}}
	return c
}

func TestNewRefusesWebhooksItCannotCall(t *testing.T) {
	good := config("good", "https://127.0.0.1:1/x", nil, "*")
	tests := map[string]func(w *configv1alpha1.ResourceInterpreterWebhook){
		"fedmesh speaks only v1alpha1": func(w *configv1alpha1.ResourceInterpreterWebhook) { w.InterpreterContextVersions = []string{"v1beta1"} },
		"caBundle holds no PEM":        func(w *configv1alpha1.ResourceInterpreterWebhook) { w.ClientConfig.CABundle = []byte("nope") },
		"want an https URL":            func(w *configv1alpha1.ResourceInterpreterWebhook) { w.ClientConfig.URL = ptr.To("http://127.0.0.1/x") },
		"neither url nor service":      func(w *configv1alpha1.ResourceInterpreterWebhook) { w.ClientConfig.URL = nil },
		"both url and service": func(w *configv1alpha1.ResourceInterpreterWebhook) {
			w.ClientConfig.Service = &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "svc"}
		},
	}
	for want, breakIt := range tests {
		t.Run(want, func(t *testing.T) {
			bad := config("bad", "https://127.0.0.1:1/x", nil, "*")
			breakIt(&bad.Webhooks[0])
			_, err := New([]configv1alpha1.ResourceInterpreterWebhookConfiguration{good, bad})
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `webhook "bad.example.io"`) {
				t.Fatalf("err = %v, want one naming the webhook and containing %q", err, want)
			}
		})
	}
}

func TestServiceEndpoint(t *testing.T) {
	w := &configv1alpha1.ResourceInterpreterWebhook{ClientConfig: admissionregistrationv1.WebhookClientConfig{
		Service: &admissionregistrationv1.ServiceReference{Namespace: "tools", Name: "interp", Path: ptr.To("/interpret"), Port: ptr.To[int32](8443)}}}
	if got, err := endpoint(w); err != nil || got != "https://interp.tools.svc:8443/interpret" {
		t.Fatalf("endpoint = %q, %v", got, err)
	}
	w.ClientConfig.Service.Port, w.ClientConfig.Service.Path = nil, nil
	if got, _ := endpoint(w); got != "https://interp.tools.svc:443" {
		t.Fatalf("default port: %q", got)
	}
}

func TestCallErrors(t *testing.T) {
	ok := func(r *ResourceInterpreterRequest) *ResourceInterpreterResponse {
		return &ResourceInterpreterResponse{UID: r.UID, Successful: true, Healthy: ptr.To(true)}
	}
	tests := []struct {
		name   string
		answer func(*ResourceInterpreterRequest) *ResourceInterpreterResponse
		want   string
	}{
		{"server error", func(*ResourceInterpreterRequest) *ResourceInterpreterResponse { return nil }, "answered HTTP 500: internal trouble"},
		{"another request's answer", func(*ResourceInterpreterRequest) *ResourceInterpreterResponse {
			return &ResourceInterpreterResponse{UID: "other", Successful: true, Healthy: ptr.To(true)}
		}, "InterpretHealth: the answer is for another request (its UID is not the request's)"},
		{"unsuccessful", func(r *ResourceInterpreterRequest) *ResourceInterpreterResponse {
			return &ResourceInterpreterResponse{UID: r.UID, Status: &RequestStatus{Message: "no idea", Code: 400}}
		}, "InterpretHealth failed: no idea"},
		{"no healthy", func(r *ResourceInterpreterRequest) *ResourceInterpreterResponse {
			return &ResourceInterpreterResponse{UID: r.UID, Successful: true}
		}, "the answer has no healthy"},
		{"slower than the timeout", func(r *ResourceInterpreterRequest) *ResourceInterpreterResponse {
			time.Sleep(1500 * time.Millisecond)
			return ok(r)
		}, "deadline exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url, ca := answering(t, tt.answer)
			in, err := New([]configv1alpha1.ResourceInterpreterWebhookConfiguration{config("w", url, ca, interpreter.InterpretHealth)})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := in.InterpretHealth(context.Background(), widget()); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestPatchAnswers(t *testing.T) {
	var seen *ResourceInterpreterRequest
	url, ca := answering(t, func(r *ResourceInterpreterRequest) *ResourceInterpreterResponse {
		seen = r
		resp := &ResourceInterpreterResponse{UID: r.UID, Successful: true, PatchType: ptr.To(PatchTypeJSONPatch)}
		switch r.Operation {
		case interpreter.ReviseReplica:
			resp.Patch = []byte(`[{"op":"add","path":"/spec","value":{"replicas":` + jsonInt(*r.DesiredReplicas) + `}}]`)
		case interpreter.Retain:
			var observed map[string]any
			_ = json.Unmarshal(r.ObservedObject.Raw, &observed)
			resp.Patch = []byte(`[{"op":"add","path":"/metadata/labels","value":{"kept":"` + observed["metadata"].(map[string]any)["name"].(string) + `"}}]`)
		case interpreter.AggregateStatus:
			resp.PatchType = ptr.To("MergePatch")
			resp.Patch = []byte(`{}`)
		}
		return resp
	})
	in, err := New([]configv1alpha1.ResourceInterpreterWebhookConfiguration{config("w", url, ca, "*")})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	w := widget()
	revised, err := in.ReviseReplica(ctx, w, 4)
	if err != nil || revised.Object["spec"].(map[string]any)["replicas"] != int64(4) {
		t.Fatalf("ReviseReplica = %v, %v", revised, err)
	}
	if seen.Kind.Kind != "Widget" || seen.Name != "w" || seen.Namespace != "shop" || *seen.DesiredReplicas != 4 {
		t.Fatalf("request %+v", seen)
	}
	if _, ok := w.Object["spec"]; ok {
		t.Fatal("ReviseReplica changed its input")
	}
	observed := widget()
	observed.SetName("member-copy")
	retained, err := in.Retain(ctx, w, observed)
	if err != nil || retained.GetLabels()["kept"] != "member-copy" {
		t.Fatalf("Retain = %v, %v", retained, err)
	}
	if _, err := in.AggregateStatus(ctx, w, nil); err == nil || !strings.Contains(err.Error(), `patchType is "MergePatch", want JSONPatch`) {
		t.Fatalf("AggregateStatus err = %v", err)
	}
}

func jsonInt(n int32) string {
	b, _ := json.Marshal(n)
	return string(b)
}
