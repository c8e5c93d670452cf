package webhook

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
)

// schemeContext is a ResourceInterpreterContext as a runtime.Object, for a webhook that decodes requests with a
// scheme, as one built on Karmada's config types does.
type schemeContext ResourceInterpreterContext

func (c *schemeContext) DeepCopyObject() runtime.Object { out := *c; return &out }

// decodingWithScheme is a webhook server that decodes each request with a scheme knowing only
// ResourceInterpreterContext of gv, refuses (without a UID, and without a TypeMeta, as Karmada's webhook library
// does) what it cannot decode, and answers healthy otherwise.
func decodingWithScheme(t *testing.T, gv schema.GroupVersion) (url string, ca []byte) {
	t.Helper()
	scheme := runtime.NewScheme()
	scheme.AddKnownTypeWithName(gv.WithKind(ContextKind), &schemeContext{})
	decoder := serializer.NewCodecFactory(scheme).UniversalDeserializer()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var answer ResourceInterpreterContext
		into := &schemeContext{}
		if _, _, err := decoder.Decode(body, nil, into); err != nil {
			answer.Response = &ResourceInterpreterResponse{Status: &RequestStatus{Message: err.Error(), Code: http.StatusBadRequest}}
		} else {
			answer.Response = &ResourceInterpreterResponse{UID: into.Request.UID, Successful: true, Healthy: ptr.To(true)}
		}
		_ = json.NewEncoder(w).Encode(&answer)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

func TestRequestsDecodeWithKarmadasConfigTypes(t *testing.T) {
	tests := []struct {
		name string
		gv   schema.GroupVersion
		want string // "" for healthy
	}{
		{"Karmada's group", schema.GroupVersion{Group: "config.karmada.io", Version: "v1alpha1"}, ""},
		// The refusal shows that the server decodes strictly, and that the webhook's own message is reported.
		{"another group", schema.GroupVersion{Group: "config.example.io", Version: "v1alpha1"},
			`InterpretHealth failed: no kind "ResourceInterpreterContext" is registered for version "config.karmada.io/v1alpha1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url, ca := decodingWithScheme(t, tt.gv)
			checkHealthy(t, url, ca, tt.want)
		})
	}
}

func TestAnswerTypeMeta(t *testing.T) {
	tests := []struct {
		name string
		tm   metav1.TypeMeta
		want string // "" for accepted
	}{
		{"none, as Karmada's library answers", metav1.TypeMeta{}, ""},
		{"Karmada's", metav1.TypeMeta{APIVersion: "config.karmada.io/v1alpha1", Kind: ContextKind}, ""},
		{"fedmesh's", metav1.TypeMeta{APIVersion: "config.fedmesh.io/v1alpha1", Kind: ContextKind}, ""},
		{"another version", metav1.TypeMeta{APIVersion: "config.karmada.io/v1beta1", Kind: ContextKind},
			`the answer's apiVersion is "config.karmada.io/v1beta1"`},
		{"another kind", metav1.TypeMeta{APIVersion: "config.karmada.io/v1alpha1", Kind: "AdmissionReview"},
			`the answer's kind is "AdmissionReview"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url, ca := answeringAs(t, tt.tm, func(r *ResourceInterpreterRequest) *ResourceInterpreterResponse {
				return &ResourceInterpreterResponse{UID: r.UID, Successful: true, Healthy: ptr.To(true)}
			})
			checkHealthy(t, url, ca, tt.want)
		})
	}
}

func TestRefusalReportsTheWebhooksReason(t *testing.T) {
	tests := []struct {
		name   string
		status *RequestStatus
		want   string
	}{
		{"message and code", &RequestStatus{Message: "cannot decode the object", Code: 400}, "InterpretHealth failed: cannot decode the object (code 400)"},
		{"message only", &RequestStatus{Message: "cannot decode the object"}, "InterpretHealth failed: cannot decode the object"},
		{"code only", &RequestStatus{Code: 500}, "InterpretHealth failed: code 500, no reason given"},
		{"no status", nil, "InterpretHealth failed: no reason given"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A refusal without the request's UID, as Karmada's library sends when it cannot decode a request.
			url, ca := answering(t, func(*ResourceInterpreterRequest) *ResourceInterpreterResponse {
				return &ResourceInterpreterResponse{Status: tt.status}
			})
			in, err := New([]configv1alpha1.ResourceInterpreterWebhookConfiguration{config("w", url, ca, interpreter.InterpretHealth)})
			if err != nil {
				t.Fatal(err)
			}
			_, err = in.InterpretHealth(context.Background(), widget())
			if err == nil || !strings.HasSuffix(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one ending %q", err, tt.want)
			}
		})
	}
}

func TestFirstMatchingWebhook(t *testing.T) {
	type named struct{ config, webhook string }
	tests := []struct {
		name    string
		configs []named // each webhook in a configuration of its own, or several in one, in list order
		merged  bool    // each configuration built on its own and merged, as the reconciler does
		want    string
	}{
		{"one configuration, webhooks out of name order", []named{{"interpreters", "zeta.example.io"}, {"interpreters", "alpha.example.io"}}, false,
			"interpreters/alpha.example.io"},
		{"configurations by name", []named{{"b", "w.example.io"}, {"a", "w.example.io"}}, false, "a/w.example.io"},
		{"the whole string, '-' before '/'", []named{{"team", "w.example.io"}, {"team-b", "w.example.io"}}, false, "team-b/w.example.io"},
		{"merged, '-' before '/'", []named{{"team", "w.example.io"}, {"team-b", "w.example.io"}}, true, "team-b/w.example.io"},
		{"merged, webhook names across configurations", []named{{"a", "z.example.io"}, {"a", "b.example.io"}, {"ab", "a.example.io"}}, true,
			"a/b.example.io"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var configs []configv1alpha1.ResourceInterpreterWebhookConfiguration
			for _, n := range tt.configs {
				if len(configs) == 0 || configs[len(configs)-1].Name != n.config {
					configs = append(configs, configv1alpha1.ResourceInterpreterWebhookConfiguration{})
					configs[len(configs)-1].Name = n.config
				}
				w := config(n.config, "https://127.0.0.1:1/x", nil, "*").Webhooks[0]
				w.Name = n.webhook
				c := &configs[len(configs)-1]
				c.Webhooks = append(c.Webhooks, w)
			}
			var in *Interpreter
			if tt.merged {
				var parts []*Interpreter
				for _, c := range configs {
					part, err := New([]configv1alpha1.ResourceInterpreterWebhookConfiguration{c})
					if err != nil {
						t.Fatal(err)
					}
					parts = append(parts, part)
				}
				in = Merge(parts...)
			} else {
				var err error
				if in, err = New(configs); err != nil {
					t.Fatal(err)
				}
			}
			if h := in.find(widgetGVK, interpreter.InterpretHealth); h == nil || h.key() != tt.want {
				t.Fatalf("first matching webhook = %v, want %q", h, tt.want)
			}
		})
	}
}

// checkHealthy asks the webhook at url whether a Widget is healthy: it must answer healthy, or, with want set, fail
// with an error containing want.
func checkHealthy(t *testing.T, url string, ca []byte, want string) {
	t.Helper()
	in, err := New([]configv1alpha1.ResourceInterpreterWebhookConfiguration{config("w", url, ca, interpreter.InterpretHealth)})
	if err != nil {
		t.Fatal(err)
	}
	healthy, err := in.InterpretHealth(context.Background(), widget())
	switch {
	case want == "" && (err != nil || !healthy):
		t.Fatalf("InterpretHealth = %v, %v; want healthy", healthy, err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Fatalf("err = %v, want %q", err, want)
	}
}
