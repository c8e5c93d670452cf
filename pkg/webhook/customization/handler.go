package customization

import (
	"context"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/customization"
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
// operation another customization of its kind defines; it denies any other with the reason. An update is judged
// so only when it changes the spec of a customization not being deleted, and then against the customizations the
// federator ranks before it: see allowedAsIs and rankedBefore.
func (h *Handler) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	var c configv1alpha1.ResourceInterpreterCustomization
	if err := h.Decoder.Decode(req, &c); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if req.Operation == admissionv1.Update {
		var old configv1alpha1.ResourceInterpreterCustomization
		if err := h.Decoder.DecodeRaw(req.OldObject, &old); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		if allowedAsIs(&old, &c) {
			return admission.Allowed("")
		}
	}
	if err := declarative.Validate(&c); err != nil {
		return admission.Denied(err.Error())
	}
	var existing configv1alpha1.ResourceInterpreterCustomizationList
	if err := h.Reader.List(ctx, &existing); err != nil {
		log.FromContext(ctx).Error(err, "listing resource interpreter customizations")
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("listing the existing customizations: %w", err))
	}
	others := existing.Items
	if req.Operation == admissionv1.Update {
		others = rankedBefore(&c, others)
	}
	if err := declarative.Conflicts(&c, others); err != nil {
		return admission.Denied(err.Error())
	}
	return admission.Allowed("")
}

// allowedAsIs reports whether the update of old to c passes unjudged: c is being deleted, or its spec is old's. A
// customization can be invalid or conflicting already (admitted while the webhook was unreachable: the chart
// registers it with failurePolicy Ignore); refused, its finalizers could not be removed, so a foreground deletion
// would never end, nor its labels or annotations be changed. The federator refuses it all the same.
func allowedAsIs(old, c *configv1alpha1.ResourceInterpreterCustomization) bool {
	return c.DeletionTimestamp != nil || equality.Semantic.DeepEqual(old.Spec, c.Spec)
}

// rankedBefore are the customizations of all that the federator takes before c (customization.Select: the older
// first; of two created in the same second, the serving one, else by name), those that keep an operation when c
// defines it too. c is judged only against them: the one that keeps an operation can still be edited when a newer
// one defines it too, which the federator refuses.
func rankedBefore(c *configv1alpha1.ResourceInterpreterCustomization, all []configv1alpha1.ResourceInterpreterCustomization) []configv1alpha1.ResourceInterpreterCustomization {
	var before []configv1alpha1.ResourceInterpreterCustomization
	for i := range all {
		o := &all[i]
		if o.Name != c.Name && customization.TakenBefore(o, c) {
			before = append(before, *o)
		}
	}
	return before
}
