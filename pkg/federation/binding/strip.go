package binding

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
)

// stripServerFields returns a copy of obj without what the host's API server set and a member must not get: its
// status, identity, versioning, ownership and finalizers, and what the host allocated for the object's kind.
func stripServerFields(obj *unstructured.Unstructured) *unstructured.Unstructured {
	out := obj.DeepCopy()
	if strip := hostAllocated[out.GroupVersionKind().GroupKind()]; strip != nil {
		strip(out) // first: it may read the managed fields
	}
	delete(out.Object, "status")
	for _, f := range []string{"resourceVersion", "uid", "managedFields", "creationTimestamp", "generation",
		"ownerReferences", "finalizers", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"} {
		unstructured.RemoveNestedField(out.Object, "metadata", f)
	}
	return out
}

// hostAllocated removes, by kind, what the host's API server filled in when the template was made: values of the
// host, which a member either allocates itself (and the execution stage keeps through the interpreter's Retain)
// or refuses.
var hostAllocated = map[schema.GroupKind]func(*unstructured.Unstructured){
	{Kind: "Service"}:               stripService,
	{Group: "batch", Kind: "Job"}:   stripJob,
	{Kind: "ServiceAccount"}:        func(u *unstructured.Unstructured) { unstructured.RemoveNestedField(u.Object, "secrets") },
	{Kind: "PersistentVolumeClaim"}: stripClaim,
	{Kind: "Pod"}:                   func(u *unstructured.Unstructured) { unstructured.RemoveNestedField(u.Object, "spec", "nodeName") },
	{Kind: "Secret"}:                stripToken,
}

// stripToken removes what the host's token controller filled into a legacy service-account token Secret: the
// host's token, CA and namespace, and its service account's UID. They are a credential of the host, and a member's
// token controller fills its own (deleting a Secret that names another UID).
func stripToken(u *unstructured.Unstructured) {
	if t, _, _ := unstructured.NestedString(u.Object, "type"); t != string(corev1.SecretTypeServiceAccountToken) {
		return
	}
	for _, k := range native.ServiceAccountTokenKeys {
		unstructured.RemoveNestedField(u.Object, "data", k)
	}
	unstructured.RemoveNestedField(u.Object, "metadata", "annotations", corev1.ServiceAccountUIDKey)
}

// stripClaim removes the bound volume, the host's binding annotations, and a storage class the host chose rather
// than the claim's author. A member's volume controller takes a claim that says it was bound but names no volume
// for one that lost its volume (Lost, never provisioned). The host's DefaultStorageClass admission (or its volume
// controller, retroactively) names the host's default class, which a member may lack, and the field is immutable
// once set. The author's choice shows in the managed fields: admission runs after the creating manager's fields are
// recorded, so a class no manager but the controller manager owns is the host's. A template without managed fields
// tells nothing, and keeps its class.
func stripClaim(u *unstructured.Unstructured) {
	unstructured.RemoveNestedField(u.Object, "spec", "volumeName")
	for _, k := range native.ClaimBindingAnnotations {
		unstructured.RemoveNestedField(u.Object, "metadata", "annotations", k)
	}
	if a, ok, _ := unstructured.NestedMap(u.Object, "metadata", "annotations"); ok && len(a) == 0 {
		unstructured.RemoveNestedField(u.Object, "metadata", "annotations")
	}
	managed := u.GetManagedFields()
	if len(managed) == 0 {
		return
	}
	for _, m := range managed {
		if m.Subresource != "" || m.Manager == "kube-controller-manager" || m.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Spec map[string]json.RawMessage `json:"f:spec"`
		}
		if json.Unmarshal(m.FieldsV1.Raw, &fields) == nil && fields.Spec["f:storageClassName"] != nil {
			return
		}
	}
	unstructured.RemoveNestedField(u.Object, "spec", "storageClassName")
}

// stripService removes the cluster IPs the host allocated (a headless Service's "None" is the template's own) and
// the health-check node port; node ports stay, since a template may ask for specific ones.
func stripService(u *unstructured.Unstructured) {
	if ip, _, _ := unstructured.NestedString(u.Object, "spec", "clusterIP"); ip != "None" {
		unstructured.RemoveNestedField(u.Object, "spec", "clusterIP")
		unstructured.RemoveNestedField(u.Object, "spec", "clusterIPs")
	}
	unstructured.RemoveNestedField(u.Object, "spec", "healthCheckNodePort")
}

// stripJob removes the selector and pod labels the host generated from the Job's UID (unless the template chose
// its selector): a member refuses a selector it did not generate, and generates its own from its Job's UID.
func stripJob(u *unstructured.Unstructured) {
	if manual, _, _ := unstructured.NestedBool(u.Object, "spec", "manualSelector"); manual {
		return
	}
	unstructured.RemoveNestedField(u.Object, "spec", "selector")
	for _, k := range native.JobControllerLabels {
		unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "labels", k)
	}
}
