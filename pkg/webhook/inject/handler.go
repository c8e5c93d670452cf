package inject

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
)

// Path is where the manager serves the injection webhook.
const Path = "/inject-proxy"

// Handler is the injection webhook: Inject on pod creation, denying the pod with Inject's error.
type Handler struct {
	// Options of the proxy. OrdinalLabel is the fallback for a pod whose ShardingConfig is not found.
	Options Options
	// Reader reads the ShardingConfig a pod names, for its shardOrdinalLabel; nil uses Options.OrdinalLabel.
	Reader client.Reader
}

var _ admission.Handler = &Handler{}

// Handle injects the proxy into a pod being created.
func (h *Handler) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create || req.Kind.Kind != "Pod" || req.SubResource != "" {
		return admission.Allowed("")
	}
	pod := &corev1.Pod{}
	if err := json.Unmarshal(req.Object.Raw, pod); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if !Requested(pod) || Injected(pod) {
		return admission.Allowed("")
	}
	if pod.Namespace == "" {
		pod.Namespace = req.Namespace
	}
	opts, err := h.podOptions(ctx, pod)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	injected, err := Inject(pod, opts)
	if err != nil {
		return admission.Denied(err.Error())
	}
	// The patch is of the pod as decoded, not of the request's: fields this k8s.io/api does not know are not in
	// the decoded pod, and a diff against the request would remove them.
	patch, err := changePatch(pod, injected)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.Patched("", patch...)
}

// podOptions are the Options with the ordinal label of the pod's ShardingConfig. A ShardingConfig that does not
// exist (yet) leaves the default: the pod is not held back for it, and the proxy fails closed until the manager
// serves it.
func (h *Handler) podOptions(ctx context.Context, pod *corev1.Pod) (Options, error) {
	opts := h.Options
	key, err := ShardingConfig(pod)
	if err != nil || h.Reader == nil {
		return opts, nil // Inject reports a bad annotation
	}
	sc := &meshv1alpha1.ShardingConfig{}
	switch err := h.Reader.Get(ctx, key, sc); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return opts, fmt.Errorf("read ShardingConfig %s: %w", key, err)
	case sc.Spec.ShardOrdinalLabel != "":
		opts.OrdinalLabel = sc.Spec.ShardOrdinalLabel
	}
	return opts, nil
}
