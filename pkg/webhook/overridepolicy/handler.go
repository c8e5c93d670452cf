package overridepolicy

import (
	"context"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/override"
)

// Path is where the webhook is served, for both kinds of policy.
const Path = "/validate-policy-fedmesh-io-v1alpha1-overridepolicy"

// Handler validates creates and updates of OverridePolicies and ClusterOverridePolicies.
type Handler struct {
	// Decoder decodes the request's object.
	Decoder admission.Decoder
}

var _ admission.Handler = &Handler{}

// NewWebhook is the admission webhook of a Handler, ready for a webhook server's Register(Path, ...).
func NewWebhook(scheme *runtime.Scheme) *admission.Webhook {
	return &admission.Webhook{Handler: &Handler{Decoder: admission.NewDecoder(scheme)}}
}

// Handle allows a policy that override.Validate accepts and denies any other with the reason.
func (h *Handler) Handle(_ context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	var spec *policyv1alpha1.OverrideSpec
	switch req.Kind.Kind {
	case "OverridePolicy":
		var p policyv1alpha1.OverridePolicy
		if err := h.Decoder.Decode(req, &p); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		spec = &p.Spec
	case "ClusterOverridePolicy":
		var p policyv1alpha1.ClusterOverridePolicy
		if err := h.Decoder.Decode(req, &p); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		spec = &p.Spec
	default:
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("%s is not an override policy", req.Kind.Kind))
	}
	if err := override.Validate(spec); err != nil {
		return admission.Denied(err.Error())
	}
	return admission.Allowed("")
}
