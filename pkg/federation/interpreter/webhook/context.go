package webhook

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
)

// ContextVersion is the only ResourceInterpreterContext version spoken; a webhook must list it in its
// interpreterContextVersions.
const ContextVersion = "v1alpha1"

// The TypeMeta of the exchanged ResourceInterpreterContext. The wire format is Karmada's, group included, so a
// webhook written for Karmada decodes fedmesh's requests with its own scheme; an answer may name Karmada's group,
// fedmesh's, or none (Karmada's webhook library answers without a TypeMeta).
const (
	ContextAPIVersion        = "config.karmada.io/" + ContextVersion
	FedmeshContextAPIVersion = "config.fedmesh.io/" + ContextVersion
	ContextKind              = "ResourceInterpreterContext"
)

// checkAnswerType refuses an answer whose TypeMeta names something other than a ResourceInterpreterContext of
// ContextVersion.
func checkAnswerType(tm metav1.TypeMeta) error {
	switch tm.APIVersion {
	case "", ContextAPIVersion, FedmeshContextAPIVersion:
	default:
		return fmt.Errorf("the answer's apiVersion is %q, want %s or %s", tm.APIVersion, ContextAPIVersion, FedmeshContextAPIVersion)
	}
	if tm.Kind != "" && tm.Kind != ContextKind {
		return fmt.Errorf("the answer's kind is %q, want %s", tm.Kind, ContextKind)
	}
	return nil
}

// PatchTypeJSONPatch is the only patch type of a response: RFC 6902 JSON Patch.
const PatchTypeJSONPatch = "JSONPatch"

// ResourceInterpreterContext is the body of a webhook call and of its answer, like Karmada's: the request going
// out, the same object with the response coming back.
type ResourceInterpreterContext struct {
	metav1.TypeMeta `json:",inline"`

	// Request is the operation and its inputs.
	Request *ResourceInterpreterRequest `json:"request,omitempty"`

	// Response is the webhook's answer.
	Response *ResourceInterpreterResponse `json:"response,omitempty"`
}

// ResourceInterpreterRequest is one operation on one object.
type ResourceInterpreterRequest struct {
	// UID identifies the call; the response repeats it.
	UID types.UID `json:"uid"`

	// Kind of the object.
	Kind metav1.GroupVersionKind `json:"kind"`

	// Name and Namespace of the object.
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`

	// Operation asked.
	Operation interpreter.Operation `json:"operation"`

	// Object is the template (desired object), or the member's object for InterpretStatus and InterpretHealth.
	Object runtime.RawExtension `json:"object"`

	// ObservedObject is the member's object, for Retain.
	ObservedObject *runtime.RawExtension `json:"observedObject,omitempty"`

	// DesiredReplicas is the cluster's share, for ReviseReplica.
	DesiredReplicas *int32 `json:"replicas,omitempty"`

	// AggregatedStatus are the per-cluster statuses, for AggregateStatus.
	AggregatedStatus []workv1alpha1.AggregatedStatusItem `json:"aggregatedStatus,omitempty"`
}

// ResourceInterpreterResponse is a webhook's answer; only the fields of the operation are read.
type ResourceInterpreterResponse struct {
	// UID is the request's.
	UID types.UID `json:"uid"`

	// Successful is false when the webhook could not interpret the object; Status then says why.
	Successful bool `json:"successful"`

	// Status explains a failure.
	Status *RequestStatus `json:"status,omitempty"`

	// Patch, of PatchType, turns the request's object into the result of ReviseReplica, Retain or
	// AggregateStatus.
	Patch     []byte  `json:"patch,omitempty"`
	PatchType *string `json:"patchType,omitempty"`

	// Replicas and ReplicaRequirements answer InterpretReplica.
	Replicas            *int32                            `json:"replicas,omitempty"`
	ReplicaRequirements *workv1alpha1.ReplicaRequirements `json:"replicaRequirements,omitempty"`

	// Components answers InterpretComponent.
	Components []interpreter.Component `json:"components,omitempty"`

	// Dependencies answers InterpretDependency.
	Dependencies []interpreter.DependentObjectReference `json:"dependencies,omitempty"`

	// RawStatus answers InterpretStatus.
	RawStatus *runtime.RawExtension `json:"rawStatus,omitempty"`

	// Healthy answers InterpretHealth.
	Healthy *bool `json:"healthy,omitempty"`
}

// RequestStatus is why a call failed.
type RequestStatus struct {
	Message string `json:"message,omitempty"`
	Code    int32  `json:"code,omitempty"`
}
