package main

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/interpretertest"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/webhook"
)

// serve starts the example over TLS and returns a webhook interpreter configured to call it.
func serve(t *testing.T) *webhook.Interpreter {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/interpret", Handler())
	srv := httptest.NewTLSServer(mux)
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})

	cfg := configv1alpha1.ResourceInterpreterWebhookConfiguration{}
	cfg.Name = "examples"
	cfg.Webhooks = []configv1alpha1.ResourceInterpreterWebhook{{
		Name:         "workloads.example.io",
		ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(srv.URL + "/interpret"), CABundle: ca},
		Rules: []configv1alpha1.RuleWithOperations{{
			Operations: []configv1alpha1.InterpreterOperation{configv1alpha1.InterpreterOperationAll},
			Rule:       configv1alpha1.Rule{APIGroups: []string{group}, APIVersions: []string{version}, Kinds: []string{kind}},
		}},
		TimeoutSeconds:             ptr.To[int32](5),
		InterpreterContextVersions: []string{"v2", webhook.ContextVersion},
	}}
	in, err := webhook.New([]configv1alpha1.ResourceInterpreterWebhookConfiguration{cfg})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// TestFixtures runs every operation through the webhook interpreter against the example, over TLS.
func TestFixtures(t *testing.T) {
	in := serve(t)
	fixtures, err := interpretertest.Load("testdata")
	if err != nil {
		t.Fatal(err)
	}
	ops := map[interpreter.Operation]bool{}
	for _, fx := range fixtures {
		ops[fx.Operation] = true
	}
	for _, op := range []interpreter.Operation{interpreter.InterpretReplica, interpreter.ReviseReplica, interpreter.Retain,
		interpreter.AggregateStatus, interpreter.InterpretStatus, interpreter.InterpretHealth, interpreter.InterpretDependency} {
		if !ops[op] {
			t.Errorf("no fixture for %s", op)
		}
	}
	interpretertest.Run(t, in, fixtures)
}

func TestWebhookFailureIsAnError(t *testing.T) {
	in := serve(t)
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(schema.GroupVersionKind{Group: group, Version: version, Kind: kind})
	obj.SetName("w")
	_, err := in.InterpretComponent(context.Background(), obj)
	if err == nil || !strings.Contains(err.Error(), `webhook "workloads.example.io" of "examples": InterpretComponent failed: operation InterpretComponent is not implemented`) {
		t.Fatalf("err = %v", err)
	}
}

func TestCertificateOutsideTheCABundleIsRefused(t *testing.T) {
	srv := httptest.NewTLSServer(Handler())
	t.Cleanup(srv.Close)
	cfg := configv1alpha1.ResourceInterpreterWebhookConfiguration{}
	cfg.Name = "untrusted"
	cfg.Webhooks = []configv1alpha1.ResourceInterpreterWebhook{{
		Name: "workloads.example.io",
		// No caBundle: the system's roots, which do not trust the test server's certificate.
		ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(srv.URL)},
		Rules: []configv1alpha1.RuleWithOperations{{Operations: []configv1alpha1.InterpreterOperation{"*"},
			Rule: configv1alpha1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Kinds: []string{"*"}}}},
		InterpreterContextVersions: []string{webhook.ContextVersion},
	}}
	in, err := webhook.New([]configv1alpha1.ResourceInterpreterWebhookConfiguration{cfg})
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(schema.GroupVersionKind{Group: group, Version: version, Kind: kind})
	if _, err := in.InterpretHealth(context.Background(), obj); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("err = %v, want a certificate error", err)
	}
}

func TestAnswersInKarmadasWireFormat(t *testing.T) {
	body := `{"apiVersion":"config.karmada.io/v1alpha1","kind":"ResourceInterpreterContext","request":{"uid":"u1",` +
		`"kind":{"group":"apps.example.io","version":"v1alpha1","kind":"Workload"},"name":"w","operation":"InterpretReplica",` +
		`"object":{"apiVersion":"apps.example.io/v1alpha1","kind":"Workload","metadata":{"name":"w"},"spec":{"replicas":3}}}}`
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/interpret", strings.NewReader(body)))
	var answer webhook.ResourceInterpreterContext
	if err := json.Unmarshal(rec.Body.Bytes(), &answer); err != nil {
		t.Fatalf("answer %q: %v", rec.Body.String(), err)
	}
	if answer.APIVersion != webhook.ContextAPIVersion || answer.Kind != webhook.ContextKind {
		t.Fatalf("answer's TypeMeta = %+v, want %s %s", answer.TypeMeta, webhook.ContextAPIVersion, webhook.ContextKind)
	}
	if r := answer.Response; r == nil || !r.Successful || r.UID != "u1" || r.Replicas == nil || *r.Replicas != 3 {
		t.Fatalf("answer = %s", rec.Body.String())
	}
}
