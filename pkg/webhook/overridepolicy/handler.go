package overridepolicy

import (
	"context"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// Handle allows a policy that override.Validate accepts and denies any other with the reason. An update that changes
// no spec, or of a policy being deleted, passes unjudged: a policy can be invalid already (admitted while the webhook
// was unreachable: the chart registers it with failurePolicy Ignore), and refused, its finalizers could not be
// removed, so a foreground deletion would never end, nor its labels be changed. The binding stage refuses it all the
// same.
func (h *Handler) Handle(_ context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	var policy, old policyObject
	switch req.Kind.Kind {
	case "OverridePolicy":
		policy, old = &policyv1alpha1.OverridePolicy{}, &policyv1alpha1.OverridePolicy{}
	case "ClusterOverridePolicy":
		policy, old = &policyv1alpha1.ClusterOverridePolicy{}, &policyv1alpha1.ClusterOverridePolicy{}
	default:
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("%s is not an override policy", req.Kind.Kind))
	}
	if err := h.Decoder.Decode(req, policy); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if req.Operation == admissionv1.Update {
		if err := h.Decoder.DecodeRaw(req.OldObject, old); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		if policy.GetDeletionTimestamp() != nil || equality.Semantic.DeepEqual(specOf(old), specOf(policy)) {
			return admission.Allowed("")
		}
	}
	if err := override.Validate(specOf(policy)); err != nil {
		return admission.Denied(err.Error())
	}
	return admission.Allowed("")
}

// policyObject is an OverridePolicy or a ClusterOverridePolicy.
type policyObject interface {
	metav1.Object
	runtime.Object
}

func specOf(p policyObject) *policyv1alpha1.OverrideSpec {
	switch p := p.(type) {
	case *policyv1alpha1.OverridePolicy:
		return &p.Spec
	case *policyv1alpha1.ClusterOverridePolicy:
		return &p.Spec
	}
	return nil
}
