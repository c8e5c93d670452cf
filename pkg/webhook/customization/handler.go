package customization

import (
	"context"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/declarative"
)

// Path is where the webhook is served.
const Path = "/validate-config-fedmesh-io-v1alpha1-resourceinterpretercustomization"

// Handler validates creates and updates of ResourceInterpreterCustomizations.
type Handler struct {
	// Reader lists the customizations already in the API, to refuse conflicts.
	Reader client.Reader
	// Decoder decodes the request's object.
	Decoder admission.Decoder
}

var _ admission.Handler = &Handler{}

// NewWebhook is the admission webhook of a Handler, ready for a webhook server's Register(Path, ...).
func NewWebhook(reader client.Reader, scheme *runtime.Scheme) *admission.Webhook {
	return &admission.Webhook{Handler: &Handler{Reader: reader, Decoder: admission.NewDecoder(scheme)}}
}

// Handle allows a customization whose scripts all compile and define their functions and that defines no
// operation another customization of its kind defines; it denies any other with the reason.
func (h *Handler) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	var c configv1alpha1.ResourceInterpreterCustomization
	if err := h.Decoder.Decode(req, &c); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if err := declarative.Validate(&c); err != nil {
		return admission.Denied(err.Error())
	}
	var existing configv1alpha1.ResourceInterpreterCustomizationList
	if err := h.Reader.List(ctx, &existing); err != nil {
		log.FromContext(ctx).Error(err, "listing resource interpreter customizations")
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("listing the existing customizations: %w", err))
	}
	if err := declarative.Conflicts(&c, existing.Items); err != nil {
		return admission.Denied(err.Error())
	}
	return admission.Allowed("")
}
